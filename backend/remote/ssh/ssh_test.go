//go:build linux

package ssh

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/remote"
	"conch/backend/testrig/sshd"
)

// client is a Client for s, with Conch's known_hosts and sockets in dirs
// of the test's own.
func client(t *testing.T, s *sshd.Server) *Client {
	t.Helper()
	ctl, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{ConfigFile: s.Config, KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), ControlDir: ctl, ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close(context.Background(), Target{Host: s.Alias})
		_ = os.RemoveAll(ctl)
	})
	return c
}

func kindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// accept scans and accepts s's key, checking its fingerprint.
func accept(t *testing.T, c *Client, s *sshd.Server) {
	t.Helper()
	ctx := context.Background()
	k, err := c.Scan(ctx, Target{Host: s.Alias}, "ED25519")
	if err != nil {
		t.Fatal(err)
	}
	if k.Fingerprint != s.Fingerprint() {
		t.Fatalf("scanned fingerprint %s, the server's is %s", k.Fingerprint, s.Fingerprint())
	}
	if err := c.Accept(k); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownKeyConnectsNothing: an unknown key stops ssh before it
// signs in; once accepted the same call runs as the host's user.
func TestUnknownKeyConnectsNothing(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	c := client(t, s)
	ctx := context.Background()
	tg := Target{Host: s.Alias}
	_, err := c.Run(ctx, tg, "id -un")
	if kindOf(err) != UnknownKey || !strings.Contains(err.Error(), "not known yet") {
		t.Fatalf("unknown key: %v", err)
	}
	if strings.Contains(s.Logs(), "Accepted publickey") {
		t.Fatalf("ssh signed in before the key was accepted:\n%s", s.Logs())
	}
	accept(t, c, s)
	accept(t, c, s) // twice writes one line
	b, _ := os.ReadFile(c.Config().KnownHosts)
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Fatalf("known_hosts has %d lines after two accepts:\n%s", n, b)
	}
	res, err := c.Run(ctx, tg, `id -un; printf '%s\n' "$HOME"; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Stdout), s.User+"\n"+s.Home+"\n"; got != want || res.ExitCode != 3 {
		t.Fatalf("ran %q exit %d, want %q exit 3", got, res.ExitCode, want)
	}
	st, err := os.Stat(c.Config().ControlDir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("control folder: %v %v", st.Mode(), err)
	}
	socks, _ := os.ReadDir(c.Config().ControlDir)
	if len(socks) != 1 {
		t.Fatalf("want one shared connection, found %d sockets", len(socks))
	}
	// The second call rides the shared connection: sshd saw one login.
	if _, err := c.Run(ctx, tg, "true"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s.Logs(), "Accepted publickey"); n != 1 {
		t.Fatalf("%d logins for two calls, want 1 (one multiplexed connection)", n)
	}
}

func TestChangedKeyRefuses(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	c := client(t, s)
	accept(t, c, s)
	ctx := context.Background()
	if _, err := c.Run(ctx, Target{Host: s.Alias}, "true"); err != nil {
		t.Fatal(err)
	}
	s.RotateHostKey()
	_, err := c.Run(ctx, Target{Host: s.Alias}, "true")
	if kindOf(err) != ChangedKey || !strings.Contains(err.Error(), "changed since it was accepted") ||
		!strings.Contains(err.Error(), c.Config().KnownHosts) {
		t.Fatalf("changed key: %v", err)
	}
}

func TestPasswordOnlySaysSetUpAKey(t *testing.T) {
	s := sshd.Start(t, sshd.Options{NoKey: true})
	c := client(t, s)
	accept(t, c, s)
	_, err := c.Run(context.Background(), Target{Host: s.Alias}, "true")
	if kindOf(err) != NoKey || !strings.Contains(err.Error(), "set one up") {
		t.Fatalf("password only: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	c := client(t, s)
	_, err := c.Run(context.Background(), Target{Host: "127.0.0.1", Port: 1}, "true")
	if kindOf(err) != Unreachable || !strings.Contains(err.Error(), "could not reach") {
		t.Fatalf("closed port: %v", err)
	}
}

// TestLoginShellRC: a login shell whose rc prints text and execs another
// shell (the "exec zsh" people put in .bashrc) neither swallows the
// command nor mixes its text into the output. Measured first: a plain
// `ssh host cmd` loses the command to the exec.
func TestLoginShellRC(t *testing.T) {
	for _, tc := range []struct{ name, shell, file, rc string }{
		{"bash execs zsh", "/bin/bash", ".bashrc", "echo 'welcome to the box'\necho oops >&2\nexec zsh\n"},
		{"zsh execs bash", "/usr/bin/zsh", ".zshenv", "echo 'zsh says hi'\n[ -z \"$INNER\" ] && INNER=1 exec bash\n"},
		{"bash prints", "/bin/bash", ".bashrc", "echo 'just text'\ncd /\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.shell); err != nil {
				t.Skipf("%s is missing: run scripts/setup --test", tc.shell)
			}
			s := sshd.Start(t, sshd.Options{Shell: tc.shell, RC: map[string]string{tc.file: tc.rc}})
			c := client(t, s)
			accept(t, c, s)
			res, err := c.Run(context.Background(), Target{Host: s.Alias}, `printf 'a b\n'; id -un; echo "$0"; echo 'it'"'"'s'`)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(res.Stdout), "a b\n"+s.User+"\n/bin/sh\nit's\n"; got != want {
				t.Fatalf("output %q, want %q", got, want)
			}
			// Input after the script reaches the script whole, from its
			// first byte, whichever shell read the script.
			in := make([]byte, 3<<20+7)
			_, _ = rand.Read(in)
			sum := sha256.Sum256(in)
			res, err = c.RunInput(context.Background(), Target{Host: s.Alias}, fmt.Sprintf("head -c %d | sha256sum", len(in)), bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Fields(string(res.Stdout)); len(got) == 0 || got[0] != hex.EncodeToString(sum[:]) {
				t.Fatalf("the host read other bytes than were sent: %q", res.Stdout)
			}
		})
	}
}

// TestForwardReachesASocketThere: a Unix socket on the host is reached
// through a local one on the shared connection; a socket a dropped
// connection left is replaced by the next forward.
func TestForwardReachesASocketThere(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 on the host for its echo socket")
	}
	s := sshd.Start(t, sshd.Options{})
	c := client(t, s)
	accept(t, c, s)
	ctx := context.Background()
	tg := Target{Host: s.Alias}
	there := s.Home + "/echo.sock"
	// An echo server on the host's socket, as the host's user.
	echo := `import socket,os
p=os.environ["SOCK"]
s=socket.socket(socket.AF_UNIX); s.bind(p); s.listen(4)
while True:
  c,_=s.accept(); c.sendall(c.recv(100).upper()); c.close()`
	if _, err := c.Run(ctx, tg, "SOCK="+remote.Quote(there)+" setsid python3 -c "+remote.Quote(echo)+" </dev/null >/dev/null 2>&1 &\nwhile [ ! -S "+remote.Quote(there)+" ]; do sleep 0.05; done"); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(c.Config().ControlDir, "echo.sock")
	for round := range 2 {
		if err := c.Forward(ctx, tg, local, there); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		conn, err := net.Dial("unix", local)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		_, _ = conn.Write([]byte("hi there\n"))
		got, _ := bufio.NewReader(conn).ReadString('\n')
		_ = conn.Close()
		if got != "HI THERE\n" {
			t.Fatalf("round %d: the host's socket said %q", round, got)
		}
		// The connection goes; its forward's socket stays behind, stale,
		// until a new connection's forward replaces it.
		c.Close(ctx, tg)
		if _, err := c.Run(ctx, tg, "true"); err != nil {
			t.Fatal(err)
		}
	}
}
