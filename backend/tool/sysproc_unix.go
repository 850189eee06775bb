//go:build unix

package tool

import "syscall"

// sysProcAttr puts a command in its own process group, so stop reaches
// every child it starts.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to every process in the group.
func signalGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
