//go:build !linux

package shortcut

// Shortcut is a registered global shortcut.
type Shortcut struct{}

// Listen is not available on this platform yet: the window's own
// Ctrl+Shift+Enter (⌘⇧↩) still works while Conch is in front.
func Listen(onPress func()) (*Shortcut, error) { return nil, ErrUnsupported }

// Close does nothing.
func (s *Shortcut) Close() error { return nil }
