package procgroup

import "syscall"

// Attr puts a command in its own process group and has the kernel kill it
// if Conch dies (children that leave it are found by healing at start).
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Signal sends sig to every process in the group pgid.
func Signal(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
