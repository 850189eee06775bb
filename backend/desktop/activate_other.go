//go:build !linux

package desktop

// ActivateRunning reports false: outside Linux, Wails' own single-instance
// lock (in Run) brings a running Conch forward.
func ActivateRunning() bool { return false }
