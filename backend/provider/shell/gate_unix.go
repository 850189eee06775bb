//go:build unix

package shell

import (
	"os"
	"os/exec"
)

// gatePrefix holds bash until Conch writes a byte to its fd 3 and ends it,
// having run nothing, at end of file: the task's start was never stored,
// or Conch died. It shares the command's first line, so bash's line
// numbers stay the command's own.
const gatePrefix = "IFS= read -r -n 1 -u 3 _ || exit 125; exec 3<&-; "

// StartsEarly says a command's process may start while its task's start
// is still being stored (taskrun.Run.Stored): it waits at a gate till then.
func (s *Shell) StartsEarly() bool { return true }

// gate is the write end of a held command's fd 3.
type gate struct{ w *os.File }

// holdAtGate makes cmd (bash -c text) wait at a gate once started. The
// parent's copy of the read end is closed by started, once cmd has started.
func holdAtGate(cmd *exec.Cmd) (g *gate, started func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Args[len(cmd.Args)-1] = gatePrefix + cmd.Args[len(cmd.Args)-1]
	return &gate{w: w}, func() { _ = r.Close() }, nil
}

// open lets the command run.
func (g *gate) open() {
	_, _ = g.w.Write([]byte{'g'}) // a command already gone (EPIPE) needs nothing
	g.shut()
}

// shut ends the command at the gate unless it was let go already.
func (g *gate) shut() { _ = g.w.Close() }
