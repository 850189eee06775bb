package procmark

import (
	"os"
	"strconv"
	"syscall"
)

// Find lists the live processes that carry m (never this process).
func Find(m Mark) []int {
	if m.Home == "" {
		return nil
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if carries(pid, m) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func carries(pid int, m Mark) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && m.Matches(env)
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
	for _, pid := range Find(m) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
