//go:build !linux && !windows

package autostart

import (
	"fmt"
	"runtime"
)

func unavailable() error {
	if runtime.GOOS == "darwin" {
		return fmt.Errorf("%w: not on macOS yet", ErrUnavailable)
	}
	return fmt.Errorf("%w (%s)", ErrUnavailable, runtime.GOOS)
}

// Path is where the setting would live; there is none here.
func (l Login) Path() (string, error) { return "", unavailable() }

// Enabled is always false here.
func (l Login) Enabled() (bool, error) { return false, nil }

// Set turning it off succeeds (there is nothing to remove); turning it on
// says it is not available.
func (l Login) Set(on bool) error {
	if on {
		return unavailable()
	}
	return nil
}
