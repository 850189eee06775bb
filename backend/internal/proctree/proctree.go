// Package proctree runs a command as a tree Conch can end whole: its
// process group, every process carrying its run's mark (a grandchild that
// moved to a session of its own, as coding agents' shell tools do, still
// carries it), and on Windows a job object. Stop ends the tree within the
// grace period and nothing else.
package proctree

import (
	"os/exec"
	"syscall"
	"time"

	"conch/backend/internal/procgroup"
	"conch/backend/procmark"
)

// Tree is one started command's processes.
type Tree struct {
	pid  int
	mark procmark.Mark
	job  job
	// since is where the process counters stood before the command
	// started, so its end reads only the processes made after it.
	since procmark.Since
}

// Start starts cmd as a tree of its own marked with mark, which must name
// a run (Mark.WithRun): cmd's environment gets the mark, and its process
// attributes a group (or job) of its own.
func Start(cmd *exec.Cmd, mark procmark.Mark) (*Tree, error) {
	cmd.Env = mark.Env(cmd.Env)
	cmd.SysProcAttr = procgroup.Attr()
	since := procmark.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &Tree{pid: cmd.Process.Pid, mark: mark, since: since}
	t.job = newJob(cmd.Process.Pid)
	return t, nil
}

// Pid is the command's own process (and process group) id.
func (t *Tree) Pid() int { return t.pid }

// Signal sends sig to the whole tree: the group, and every process that
// carries the run's mark wherever it went.
func (t *Tree) Signal(sig syscall.Signal) {
	procgroup.Signal(t.pid, sig)
	if t.mark.Run != "" {
		procmark.SignalSince(t.mark, t.since, sig)
	}
	if sig == syscall.SIGKILL {
		t.job.terminate()
	}
}

// Stop asks the tree to end (SIGTERM), waits up to grace for the command
// (exited closes when it has been waited for), then kills whatever is left
// of the tree, the command included.
func (t *Tree) Stop(grace time.Duration, exited <-chan struct{}) {
	t.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
	}
	t.End()
}

// End kills what is left of the tree once the command is done (or must
// be): a background child in its group, a setsid'd grandchild, a job
// member. Safe more than once.
func (t *Tree) End() {
	t.Signal(syscall.SIGKILL)
}

// Release lets go of the tree's handles (the job object) once it ended.
func (t *Tree) Release() { t.job.close() }
