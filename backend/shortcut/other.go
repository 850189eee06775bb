//go:build !linux && !windows

package shortcut

// Shortcut is a registered global shortcut.
type Shortcut struct{}

// Listen is not available on macOS yet: a global hotkey there must be
// registered on the main thread, which the window's own event loop holds.
// The window's ⌘⇧↩ still works while Conch is in front.
func Listen(onPress func()) (*Shortcut, error) { return nil, ErrUnsupported }

// Close does nothing.
func (s *Shortcut) Close() error { return nil }
