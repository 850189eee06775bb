//go:build !linux

package shell

import "syscall"

// sysProcAttr puts the command in its own process group so stop reaches
// every child.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
