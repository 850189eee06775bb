//go:build unix && !linux

package agentcli

import "syscall"

// sysProcAttr puts the command in its own process group so stop reaches
// every child.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process in the group.
func signalGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
