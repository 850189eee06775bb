// Package brief says a long text in a short line, as a notification's
// title or a tray menu's entry shows it.
package brief

import "strings"

// FirstLine returns s's first line, trimmed of the space around it; s is
// trimmed first, so blank lines before the text are passed over.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// Clip returns s cut to at most n runes, ending in "…" where it was cut
// (with no space left before it); s short enough is returned as it is.
func Clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:max(n-1, 0)])) + "…"
	}
	return s
}
