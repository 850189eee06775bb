//go:build linux

package sshd

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// trust writes the server's key into the client's known_hosts.
func trust(t *testing.T, s *Server) {
	t.Helper()
	line := "[127.0.0.1]:" + strconv.Itoa(s.Port) + " " + s.HostKey() + "\n"
	if err := os.WriteFile(s.KnownHosts, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ssh(s *Server, args ...string) (string, error) {
	out, err := exec.Command("ssh", append([]string{"-F", s.Config, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", s.Alias}, args...)...).CombinedOutput()
	return string(out), err
}

// TestLogsInAsItsUser: the client config reaches the server as the
// test's own user, in its own home, once the key is trusted; before, the
// key is unknown and nothing runs.
func TestLogsInAsItsUser(t *testing.T) {
	s := Start(t, Options{})
	if out, err := ssh(s, "id -un"); err == nil || !strings.Contains(out, "host key is known") {
		t.Fatalf("an unknown host key connected: %v %q", err, out)
	}
	trust(t, s)
	out, err := ssh(s, "id -un; pwd")
	if err != nil {
		t.Fatalf("ssh: %v %s\n%s", err, out, s.Logs())
	}
	if want := s.User + "\n" + s.Home + "\n"; out != want {
		t.Fatalf("ssh said %q, want %q", out, want)
	}
}

// TestRotateHostKey: after a rotation the old key no longer matches.
func TestRotateHostKey(t *testing.T) {
	s := Start(t, Options{})
	trust(t, s)
	old := s.Fingerprint()
	s.RotateHostKey()
	if s.Fingerprint() == old {
		t.Fatal("the host key did not change")
	}
	out, err := ssh(s, "true")
	if err == nil || !strings.Contains(out, "REMOTE HOST IDENTIFICATION HAS CHANGED") {
		t.Fatalf("a changed key connected: %v %q", err, out)
	}
}

// TestNoKey: a user without the client key asks for a password, which
// BatchMode refuses.
func TestNoKey(t *testing.T) {
	s := Start(t, Options{NoKey: true})
	trust(t, s)
	out, err := ssh(s, "true")
	if err == nil || !strings.Contains(out, "Permission denied (publickey,password)") {
		t.Fatalf("a keyless login connected or failed otherwise: %v %q", err, out)
	}
}

// TestRC: the rc option's text is printed by a command's login shell.
func TestRC(t *testing.T) {
	s := Start(t, Options{RC: map[string]string{".bashrc": "echo hello from rc\nexec /bin/sh\n"}})
	trust(t, s)
	out, _ := ssh(s, "echo the command")
	t.Logf("ssh host 'echo the command' said %q", out)
	if !strings.Contains(out, "hello from rc") {
		t.Fatalf("the rc did not run: %q", out)
	}
}

// TestCleanup: the user and its processes are gone after the test.
func TestCleanup(t *testing.T) {
	var name string
	var uid int
	t.Run("inner", func(t *testing.T) {
		s := Start(t, Options{})
		trust(t, s)
		name, uid = s.User, s.UID
		cmd := exec.Command("ssh", "-F", s.Config, "-o", "BatchMode=yes", s.Alias, "sleep 60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		for range 100 {
			if len(Processes(uid)) > 0 {
				return
			}
			exec.Command("sleep", "0.05").Run()
		}
		t.Fatal("the session never started")
	})
	if ps := Processes(uid); len(ps) > 0 {
		t.Fatalf("processes of %s left: %v", name, ps)
	}
	if out, err := exec.Command("id", name).CombinedOutput(); err == nil {
		t.Fatalf("user %s left: %s", name, out)
	}
}
