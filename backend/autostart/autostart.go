// Package autostart is "Open at login": it makes the system start Conch
// when the person logs in, or stops it doing so. On Linux that is an XDG
// autostart entry, $XDG_CONFIG_HOME/autostart/dev.conch.desktop (else
// ~/.config/autostart); on Windows a value under the current user's Run
// key; macOS has none yet.
package autostart

import (
	"errors"
)

// ErrUnavailable is returned when this system has no way for Conch to
// open at login (yet); its text says so.
var ErrUnavailable = errors.New("open at login is not available on this system")

// Login is how one system starts a program at login. Exe is the program it
// starts: the running conch's own path.
type Login struct {
	Exe string
	// Dir is where the entry goes ("": the system's place). Linux's tests
	// set XDG_CONFIG_HOME instead; Windows ignores it.
	Dir string
}
