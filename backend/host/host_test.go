//go:build linux

package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/remote/ssh"
	"conch/backend/store"
	"conch/backend/testrig/sshd"
)

// setup is a started Service over a real store, with ssh reading s's
// client config.
func setup(t *testing.T, s *sshd.Server) *Service {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctl, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(ctl) })
	cfg := ssh.Config{KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), ControlDir: ctl, ConnectTimeout: 5 * time.Second}
	if s != nil {
		cfg.ConfigFile = s.Config
	}
	c, err := ssh.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc := New(Config{Store: st, SSH: c, Version: "1.2.3"})
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return svc
}

func add(t *testing.T, svc *Service, id, target string) store.Host {
	t.Helper()
	h, created, err := svc.Put(id, PutRequest{Target: target})
	if err != nil || !created {
		t.Fatalf("add %s: %v (created %v)", id, err, created)
	}
	return h
}

// put writes a file into the host user's home, as that user's.
func put(t *testing.T, s *sshd.Server, rel, text string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(s.Home, rel)
	for d := filepath.Dir(p); d != s.Home; d = filepath.Dir(d) {
		defer os.Chown(d, s.UID, s.UID)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(p, s.UID, s.UID)
}

// TestUnknownKeyWaitsForTheOK: a new host's key is shown with its
// fingerprint and nothing signs in; a connection waits until the person
// accepts that key, then runs as the host's user in its home, and a test
// then finds the system, the runner and the CLIs there.
func TestUnknownKeyWaitsForTheOK(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	svc := setup(t, s)
	ctx := context.Background()
	add(t, svc, "devbox", s.Alias)
	put(t, s, ".local/bin/claude", "#!/bin/sh\necho '2.1.300 (Claude Code)'\n", 0o755)
	put(t, s, RunnerDir+"/1.2.3/conch", "#!/bin/sh\n", 0o755)
	for range 2 {
		r, err := svc.Test(ctx, "devbox")
		if err != nil {
			t.Fatal(err)
		}
		if h := r.Host; h.Status != store.HostUnknownKey || h.Fingerprint != s.Fingerprint() || !strings.Contains(h.Reason, s.Fingerprint()) {
			t.Fatalf("unknown key: %+v", h)
		}
	}
	ran := make(chan string, 1)
	go func() {
		res, err := svc.Run(ctx, "devbox", `id -un; printf '%s\n' "$HOME"`)
		if err != nil {
			ran <- "error: " + err.Error()
			return
		}
		ran <- string(res.Stdout)
	}()
	select {
	case out := <-ran:
		t.Fatalf("ran before the key was accepted: %s", out)
	case <-time.After(500 * time.Millisecond):
	}
	if strings.Contains(s.Logs(), "Accepted publickey") {
		t.Fatalf("signed in before the key was accepted:\n%s", s.Logs())
	}
	if _, err := svc.AcceptKey("devbox", AcceptRequest{Fingerprint: "SHA256:notthekey"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("accepting another fingerprint: %v", err)
	}
	if _, err := svc.AcceptKey("devbox", AcceptRequest{Fingerprint: s.Fingerprint()}); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-ran:
		if want := s.User + "\n" + s.Home + "\n"; out != want {
			t.Fatalf("ran %q, want %q", out, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting connection did not go on after the accept")
	}
	r, err := svc.Test(ctx, "devbox")
	if err != nil {
		t.Fatal(err)
	}
	h := r.Host
	if h.Status != store.HostReady || h.User != s.User || h.Home != s.Home || !strings.HasPrefix(h.System, "Linux ") || h.Fingerprint != "" {
		t.Fatalf("after the accept: %+v", h)
	}
	if len(h.Providers) != 1 || h.Providers[0].ID != "claude" || h.Providers[0].Version != "2.1.300 (Claude Code)" {
		t.Fatalf("CLIs found: %+v", h.Providers)
	}
	if !r.Runner.Present || h.Version != "1.2.3" {
		t.Fatalf("runner: %+v, version %q", r.Runner, h.Version)
	}
}

// A key accepted while a test of the host was under way, after its
// connection met the key as unknown, stays accepted: the test tries again
// rather than put the unknown key back for a second OK, which no one would
// give (a connection waiting for the first would wait for ever).
func TestAKeyAcceptedWhileATestRunsStaysAccepted(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	svc := setup(t, s)
	ctx := context.Background()
	add(t, svc, "devbox", s.Alias)
	put(t, s, RunnerDir+"/1.2.3/conch", "#!/bin/sh\n", 0o755)
	r, err := svc.Test(ctx, "devbox")
	if err != nil {
		t.Fatal(err)
	}
	if r.Host.Status != store.HostUnknownKey {
		t.Fatalf("first test: %+v", r.Host)
	}
	probes := 0
	svc.probed = func() {
		if probes++; probes == 1 {
			if _, err := svc.AcceptKey("devbox", AcceptRequest{Fingerprint: r.Host.Fingerprint}); err != nil {
				t.Errorf("accept: %v", err)
			}
		}
	}
	got, err := svc.Test(ctx, "devbox")
	if err != nil {
		t.Fatal(err)
	}
	if h := got.Host; h.Status != store.HostReady || h.Fingerprint != "" || h.User != s.User || probes != 2 {
		t.Fatalf("after an accept during the test (%d probes): %+v; want ready, tested again", probes, h)
	}
}

// accepted is a host whose key is accepted already.
func accepted(t *testing.T, svc *Service, s *sshd.Server) {
	t.Helper()
	add(t, svc, "devbox", s.Alias)
	if _, err := svc.Test(context.Background(), "devbox"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AcceptKey("devbox", AcceptRequest{Fingerprint: s.Fingerprint()}); err != nil {
		t.Fatal(err)
	}
}

func TestChangedKeyIsRefused(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	svc := setup(t, s)
	accepted(t, svc, s)
	ctx := context.Background()
	if r, err := svc.Test(ctx, "devbox"); err != nil || r.Host.Status != store.HostReady {
		t.Fatalf("before the rotation: %+v %v", r.Host, err)
	}
	s.RotateHostKey()
	r, err := svc.Test(ctx, "devbox")
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Host; h.Status != store.HostKeyChanged || !strings.Contains(h.Reason, "changed since it was accepted") || h.Fingerprint != "" {
		t.Fatalf("after the rotation: %+v", h)
	}
	if _, err := svc.Run(ctx, "devbox", "true"); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("a run on a changed key: %v", err)
	}
}

func TestPasswordOnlySaysSetUpAKey(t *testing.T) {
	s := sshd.Start(t, sshd.Options{NoKey: true})
	svc := setup(t, s)
	accepted(t, svc, s)
	r, err := svc.Test(context.Background(), "devbox")
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Host; h.Status != store.HostNoKey || !strings.Contains(h.Reason, "set one up") {
		t.Fatalf("password only: %+v", h)
	}
}

// TestLoginShellThatExecs: a .bashrc that prints and execs zsh changes
// nothing the test reads.
func TestLoginShellThatExecs(t *testing.T) {
	if _, err := os.Stat("/usr/bin/zsh"); err != nil {
		t.Skip("zsh is missing: run scripts/setup --test")
	}
	s := sshd.Start(t, sshd.Options{RC: map[string]string{".bashrc": "echo 'Welcome!'\necho 'user\tmallory'\nexec zsh\n"}})
	svc := setup(t, s)
	accepted(t, svc, s)
	r, err := svc.Test(context.Background(), "devbox")
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Host; h.Status != store.HostReady || h.User != s.User || h.Home != s.Home {
		t.Fatalf("through the rc: %+v", h)
	}
}

// TestTwoAcceptsOfOneKey: two clients accepting the same key at once: one
// accepts it, the other is a conflict saying no key waits any more; the
// key is written once.
func TestTwoAcceptsOfOneKey(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	svc := setup(t, s)
	add(t, svc, "devbox", s.Alias)
	if _, err := svc.Test(context.Background(), "devbox"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = svc.AcceptKey("devbox", AcceptRequest{Fingerprint: s.Fingerprint()}) })
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrConflict) && strings.Contains(err.Error(), "waits to be accepted"):
			conflicts++
		default:
			t.Fatalf("accept: %v", err)
		}
	}
	if ok != 1 || conflicts != 1 {
		t.Fatalf("%d accepted, %d conflicts; want 1 and 1", ok, conflicts)
	}
	b, _ := os.ReadFile(svc.cfg.SSH.Config().KnownHosts)
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Fatalf("known_hosts has %d lines:\n%s", n, b)
	}
}

// TestRecords: adding twice is one host and a conflict; a change needs
// the rev; bad input is invalid; the records outlive a restart.
func TestRecords(t *testing.T) {
	svc := setup(t, nil)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = svc.Put("box", PutRequest{Target: "me@10.0.0.9:2222"}) })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !(errors.Is(errs[0], ErrConflict) || errors.Is(errs[1], ErrConflict)) {
		t.Fatalf("two adds: %v, %v", errs[0], errs[1])
	}
	h, _ := svc.Get("box")
	if h.Limits != DefaultLimits || h.Status != store.HostNew || h.Name != "box" || h.Rev != 1 {
		t.Fatalf("a new host: %+v", h)
	}
	stale := int64(0)
	if _, _, err := svc.Put("box", PutRequest{Target: "devbox", Rev: &stale}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a stale rev: %v", err)
	}
	if h, _, err := svc.Put("box", PutRequest{Name: "Box", Target: "devbox", Rev: &h.Rev}); err != nil || h.Target != "devbox" || h.Rev != 2 {
		t.Fatalf("a change: %+v %v", h, err)
	}
	if _, _, err := svc.Put("other", PutRequest{Name: "Box", Target: "devbox"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second host of the same name: %v", err)
	}
	for _, tc := range []struct{ id, target string }{{"Bad ID", "devbox"}, {"x", "-oProxyCommand=id"}, {"x", ""}, {"x", "me@host:99999"}} {
		if _, _, err := svc.Put(tc.id, PutRequest{Target: tc.target}); !errors.Is(err, ErrInvalid) {
			t.Errorf("put %q %q: %v", tc.id, tc.target, err)
		}
	}
	if _, err := svc.AcceptKey("box", AcceptRequest{Fingerprint: "nope"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a fingerprint that is not one: %v", err)
	}
	if err := svc.Delete("box"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Delete("box"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
