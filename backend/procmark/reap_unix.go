//go:build linux || darwin

package procmark

import (
	"os"
	"syscall"
)

// Find lists the live processes that carry m (never this process).
func Find(m Mark) []int {
	if m.Home == "" {
		return nil
	}
	var out []int
	self := os.Getpid()
	for _, pid := range pids() {
		if pid == self {
			continue
		}
		if carries(pid, m) {
			out = append(out, pid)
		}
	}
	return out
}

func carries(pid int, m Mark) bool {
	env, ok := environOf(pid)
	return ok && m.Matches(env)
}

// Signal sends sig to every live process that carries m, wherever its
// group or session, and reports how many it reached.
func Signal(m Mark, sig syscall.Signal) int {
	n := 0
	for _, pid := range Find(m) {
		if kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

// Reap ends what a Conch that died left behind for m: the process group
// pgid if its leader carries m (pgid 0: none recorded), then every other
// process that carries m, wherever its group or session. It reports how
// many processes it signalled.
func Reap(m Mark, pgid int) int {
	n := 0
	if pgid > 0 && carries(pgid, m) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		n++
	}
	return n + Signal(m, syscall.SIGKILL)
}
