//go:build !windows

package proctree

// job is a Windows job object; elsewhere the group and the marks reach
// the whole tree.
type job struct{}

func newJob(int) job   { return job{} }
func (job) terminate() {}
func (job) close()     {}
