// Package shortcut listens for Conch's global shortcut, Ctrl+Shift+Enter
// (⌘⇧↩ on macOS), anywhere on the desktop.
//
// On Linux it grabs the key on the X server itself (pure Go X11, so nothing
// touches the display until Listen is called: a binary without a display,
// like `conch serve` on a server, never needs one).
package shortcut

import (
	"errors"
	"sync"
	"time"
)

// Name is the shortcut as the person reads it on this platform.
var Name = "Ctrl+Shift+Enter"

// ErrTaken is returned when another program holds the combination.
var ErrTaken = errors.New("another program already uses " + Name)

// ErrUnsupported is returned where Conch cannot listen globally.
var ErrUnsupported = errors.New("global shortcuts are not supported here")

// Debounce is how long after a press further presses are ignored (a held
// key repeats).
const Debounce = 400 * time.Millisecond

// debouncer calls f for the first press of a burst only.
type debouncer struct {
	mu   sync.Mutex
	last time.Time
	f    func()
}

func (d *debouncer) press(now time.Time) {
	d.mu.Lock()
	if !d.last.IsZero() && now.Sub(d.last) < Debounce {
		d.last = now
		d.mu.Unlock()
		return
	}
	d.last = now
	d.mu.Unlock()
	d.f()
}
