//go:build !linux

package procmark

import "syscall"

// Since is where the process counters stood before a command started;
// only Linux has them to read.
type Since struct{}

// Now reads the counters (none here).
func Now() Since { return Since{} }

// SignalSince is Signal: without the counters every process is looked at.
func SignalSince(m Mark, _ Since, sig syscall.Signal) int { return Signal(m, sig) }
