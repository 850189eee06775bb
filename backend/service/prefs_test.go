package service

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"conch/backend/autostart"
	"conch/backend/store"
	"conch/backend/taskrun"
)

func prefsService(t *testing.T, at AtLogin) *Service {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(Config{Prefs: st, AtLogin: at})
}

func TestOpenAtLoginWritesTheAutostartEntryAndReadsItBack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the XDG autostart entry is Linux's")
	}
	dir := t.TempDir()
	login := autostart.Login{Exe: "/usr/bin/conch", Dir: dir}
	s := prefsService(t, login)
	entry := filepath.Join(dir, "dev.conch.desktop")

	p, err := s.Preferences()
	if err != nil || p.OpenAtLogin {
		t.Fatalf("a new home: OpenAtLogin %v, %v", p.OpenAtLogin, err)
	}
	p.OpenAtLogin = true
	if got, err := s.SetPreferences(p); err != nil || !got.OpenAtLogin {
		t.Fatalf("SetPreferences(on) = %v, %v", got.OpenAtLogin, err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("on, but no autostart entry: %v", err)
	}
	if got, _ := s.Preferences(); !got.OpenAtLogin {
		t.Fatal("on, but Preferences reads it off")
	}

	// Removed by hand (or by the desktop's settings): the page says off.
	if err := os.Remove(entry); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Preferences(); got.OpenAtLogin {
		t.Fatal("the entry is gone, but Preferences reads it on")
	}
	p.OpenAtLogin = true
	if _, err := s.SetPreferences(p); err != nil {
		t.Fatal(err)
	}
	p.OpenAtLogin = false
	if got, err := s.SetPreferences(p); err != nil || got.OpenAtLogin {
		t.Fatalf("SetPreferences(off) = %v, %v", got.OpenAtLogin, err)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Fatalf("off, but the entry is there: %v", err)
	}
}

func TestOpenAtLoginWhereThereIsNoneIsRefusedSayingSo(t *testing.T) {
	s := prefsService(t, nil)
	p, err := s.Preferences()
	if err != nil {
		t.Fatal(err)
	}
	p.OpenAtLogin = true
	_, err = s.SetPreferences(p)
	if !errors.Is(err, taskrun.ErrInvalid) || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("SetPreferences(on) with no autostart = %v, want invalid", err)
	}
	if got, _ := s.Preferences(); got.OpenAtLogin {
		t.Fatal("refused, but saved on")
	}
	p.OpenAtLogin = false
	p.RetentionDays = 30
	if got, err := s.SetPreferences(p); err != nil || got.RetentionDays != 30 {
		t.Fatalf("the rest still saves: %+v, %v", got, err)
	}
}
