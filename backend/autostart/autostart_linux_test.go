package autostart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenAtLoginWritesAndRemovesTheXDGAutostartEntry(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	exe := "/usr/bin/conch"
	l := Login{Exe: exe}
	p, err := l.Path()
	if want := filepath.Join(cfg, "autostart", "dev.conch.desktop"); err != nil || p != want {
		t.Fatalf("Path = %q, %v; want %s", p, err, want)
	}
	if on, err := l.Enabled(); err != nil || on {
		t.Fatalf("before: Enabled = %v, %v", on, err)
	}
	if err := l.Set(true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the entry is not there: %v", err)
	}
	for _, want := range []string{"[Desktop Entry]\n", "\nType=Application\n", "\nExec=/usr/bin/conch\n", "\nIcon=dev.conch\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the entry has no %q:\n%s", strings.TrimSpace(want), b)
		}
	}
	validate(t, p)
	if on, err := l.Enabled(); err != nil || !on {
		t.Fatalf("after on: Enabled = %v, %v", on, err)
	}
	if err := l.Set(true); err != nil { // twice is fine
		t.Fatal(err)
	}
	if err := l.Set(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("after off the entry is still there: %v", err)
	}
	if on, err := l.Enabled(); err != nil || on {
		t.Fatalf("after off: Enabled = %v, %v", on, err)
	}
	if err := l.Set(false); err != nil {
		t.Fatalf("off when already off: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 0 {
		t.Fatalf("left in the autostart folder: %v", entries)
	}
}

func TestARelativeXDGConfigHomeIsIgnored(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "relative/config")
	p, err := Login{}.Path()
	if want := filepath.Join(home, ".config", "autostart", "dev.conch.desktop"); err != nil || p != want {
		t.Fatalf("Path = %q, %v; want %s", p, err, want)
	}
}

func TestAnEntryTurnedOffInTheDesktopsSettingsIsOff(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	l := Login{Exe: "/usr/bin/conch"}
	if err := l.Set(true); err != nil {
		t.Fatal(err)
	}
	p, _ := l.Path()
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "X-GNOME-Autostart-enabled=true", "X-GNOME-Autostart-enabled=false", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if on, err := l.Enabled(); err != nil || on {
		t.Fatalf("an entry GNOME turned off: Enabled = %v, %v", on, err)
	}
}

func TestAnExecWithSpacesAndQuotesIsQuotedAsTheSpecSays(t *testing.T) {
	for exe, want := range map[string]string{
		"/opt/conch/conch":           "/opt/conch/conch",
		"/home/a b/conch":            `"/home/a b/conch"`,
		`/home/it's "x"/$c\d/con%ch`: `"/home/it's \\"x\\"/\\$c\\\\d/con%%ch"`,
	} {
		if got := execQuote(exe); got != want {
			t.Errorf("execQuote(%q) = %s, want %s", exe, got, want)
		}
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	l := Login{Exe: "/home/a b/conch"}
	if err := l.Set(true); err != nil {
		t.Fatal(err)
	}
	p, _ := l.Path()
	validate(t, p)
}

// validate runs desktop-file-validate on the entry where it is installed
// (scripts/setup installs it for the package checks).
func validate(t *testing.T, path string) {
	t.Helper()
	bin, err := exec.LookPath("desktop-file-validate")
	if err != nil {
		t.Log("no desktop-file-validate here: the entry is not validated")
		return
	}
	if out, err := exec.Command(bin, path).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("desktop-file-validate %s: %v\n%s", path, err, out)
	}
}
