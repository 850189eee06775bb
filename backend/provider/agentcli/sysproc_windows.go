package agentcli

import (
	"os"
	"syscall"
)

// sysProcAttr starts the command in a new process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup ends the process: Windows has no SIGTERM to send, so stop is
// immediate there.
func signalGroup(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
