package procmark

import (
	"os"
	"strconv"
	"syscall"
)

// environOf reads a process's environment (NUL-separated).
func environOf(pid int) ([]byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return b, err == nil
}

// pids lists the live processes.
func pids() []int {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(dirs))
	for _, d := range dirs {
		if pid, err := strconv.Atoi(d.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func kill(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
