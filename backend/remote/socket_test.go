//go:build unix

package remote

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestListenMakesAPrivateSocketAndRefusesASecond(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(base, "run", "runner.sock")
	s, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, path: 0o600, path + PidSuffix: 0o600} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	b, _ := os.ReadFile(path + PidSuffix)
	if strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid file holds %q, want %d", b, os.Getpid())
	}
	_, err = Listen(path)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Listen: %v, want ErrHeld naming process %d", err, os.Getpid())
	}
	// The refusal left the live runner's socket alone.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the first runner's socket stopped answering: %v", err)
	}
	c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, p := range []string{path, path + PidSuffix} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Close (%v)", p, err)
		}
	}
}

func TestListenReplacesAStaleSocketOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "runner.sock")
	// A runner that was killed leaves its socket and pid file, unlocked.
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	if err := os.WriteFile(path+PidSuffix, []byte("999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Listen(path)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("the socket's folder stayed %v", fi.Mode().Perm())
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the new socket does not answer: %v", err)
	}
	c.Close()
	s.Close()

	file := filepath.Join(dir, "not-a-socket")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a plain file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Fatalf("the plain file was touched: %q", b)
	}
	if _, err := Listen("relative.sock"); err == nil {
		t.Fatal("a relative socket path was taken")
	}
}
