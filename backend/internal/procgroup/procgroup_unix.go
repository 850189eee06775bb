//go:build unix && !linux

package procgroup

import "syscall"

// Attr puts a command in its own process group.
func Attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Signal sends sig to every process in the group pgid.
func Signal(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
