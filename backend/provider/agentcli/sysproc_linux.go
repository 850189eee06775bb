package agentcli

import "syscall"

// sysProcAttr puts the command in its own process group (so stop reaches
// every child) and has the kernel kill it if Conch dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to every process in the group.
func signalGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
