package procgroup

import (
	"os"
	"syscall"
)

// Attr starts a command in a new process group.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// Signal ends the process: Windows has no SIGTERM to send, so a stop is
// immediate there.
func Signal(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
