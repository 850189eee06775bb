package autostart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"conch/backend/version"
)

// Path is the XDG autostart entry: $XDG_CONFIG_HOME/autostart (an absolute
// one; else ~/.config/autostart), named for the app's desktop id.
func (l Login) Path() (string, error) {
	dir := l.Dir
	if dir == "" {
		cfg := os.Getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(cfg) { // the spec: a relative value is ignored
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("find the autostart folder: %w", err)
			}
			cfg = filepath.Join(home, ".config")
		}
		dir = filepath.Join(cfg, "autostart")
	}
	return filepath.Join(dir, version.AppID+".desktop"), nil
}

// Enabled says whether the entry is there and starts Conch.
func (l Login) Enabled() (bool, error) {
	p, err := l.Path()
	if err != nil {
		return false, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the autostart entry: %w", err)
	}
	// An entry someone turned off in their desktop's settings stays but says so.
	return !strings.Contains(string(b), "\nHidden=true") && !strings.Contains(string(b), "\nX-GNOME-Autostart-enabled=false"), nil
}

// Set writes the entry (on) or removes it (off).
func (l Login) Set(on bool) error {
	p, err := l.Path()
	if err != nil {
		return err
	}
	if !on {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the autostart entry: %w", err)
		}
		return nil
	}
	if l.Exe == "" {
		return errors.New("open at login: which conch to start is not known")
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("make the autostart folder: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(Entry(l.Exe)), 0o644); err != nil {
		return fmt.Errorf("write the autostart entry: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write the autostart entry: %w", err)
	}
	return nil
}

// Entry is the autostart desktop entry that starts exe.
func Entry(exe string) string {
	return "[Desktop Entry]\n" +
		"Type=Application\n" +
		"Name=Conch\n" +
		"Comment=Open Conch when you log in\n" +
		"Exec=" + execQuote(exe) + "\n" +
		"Icon=" + version.AppID + "\n" +
		"Terminal=false\n" +
		"X-GNOME-Autostart-enabled=true\n"
}

// execQuote writes a path as an Exec key's program, quoted as the Desktop
// Entry spec says when it holds a space or a reserved character, and with
// the field-code % doubled.
func execQuote(path string) string {
	path = strings.ReplaceAll(path, "%", "%%")
	if !strings.ContainsAny(path, " \t\n\"'\\><~|&;$*?#()`") {
		return path
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range path {
		// Escaped once for the quoting and once more for the string value.
		switch r {
		case '\\':
			b.WriteString(`\\\\`)
			continue
		case '"', '`', '$':
			b.WriteString(`\\`)
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
