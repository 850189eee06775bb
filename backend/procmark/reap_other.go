//go:build !linux

package procmark

// Find lists the live processes that carry m; only Linux can read another
// process's environment, so elsewhere it finds none.
func Find(Mark) []int { return nil }

// Reap ends what a Conch that died left behind for m. Elsewhere than Linux
// marks cannot be read, so nothing is signalled: the OS ends a dead Conch's
// direct children, and a recorded pid alone is never trusted.
func Reap(Mark, int) int { return 0 }
