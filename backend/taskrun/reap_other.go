//go:build !linux

package taskrun

// reapGroup is a no-op where processes cannot be recognised as a task's;
// there the desktop app relies on ending its process groups when it stops.
func reapGroup(pgid int, taskID string) {}
