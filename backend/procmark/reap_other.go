//go:build !linux && !darwin

package procmark

import "syscall"

// Find lists the live processes that carry m. Windows has no way for
// Conch to read another process's environment, so it finds none: there
// every command runs in a job object that ends its whole tree instead
// (internal/proctree).
func Find(Mark) []int { return nil }

// Signal reaches no process where marks cannot be read.
func Signal(Mark, syscall.Signal) int { return 0 }

// Reap ends nothing where marks cannot be read: a recorded pid alone is
// never trusted, and the OS ends a job object's processes with Conch.
func Reap(Mark, int) int { return 0 }
