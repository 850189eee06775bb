package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"conch/backend/errcode"
	"conch/backend/remote"
	"conch/backend/remote/ssh"
	"conch/backend/store"
)

// RunnerDir is where the Conch runner's builds are kept in the host
// user's home, one folder per version (~/.conch-remote/<version>/conch).
const RunnerDir = ".conch-remote"

// Agents are the coding-agent CLIs a test looks for on the host.
var Agents = []string{"claude", "codex", "gemini"}

// Agent is what Conch calls the coding-agent CLI whose command is cmd:
// its provider's kind ("claude-code") and name ("Claude Code"); "" for a
// command that is not one.
func Agent(cmd string) (kind, name string) {
	switch cmd {
	case "claude":
		return "claude-code", "Claude Code"
	case "codex":
		return "codex", "Codex"
	case "gemini":
		return "gemini", "Gemini CLI"
	}
	return "", ""
}

// probe is what a test runs there: plain sh, one tab-separated fact a
// line. The CLIs are looked for on the user's PATH and where installers
// put them when only a login shell's profile adds them.
var probe = remote.AgentPathLine() + `
printf 'system\t%s\n' "$(uname -sm)"
printf 'user\t%s\n' "$(id -un)"
printf 'home\t%s\n' "$HOME"
for v in "$HOME"/` + RunnerDir + `/*/conch; do
  [ -x "$v" ] && printf 'runner\t%s\n' "$(basename "$(dirname "$v")")"
done
for c in ` + "claude codex gemini" + `; do
  if p=$(command -v "$c" 2>/dev/null); then
    printf 'cli\t%s\t%s\t%s\n' "$c" "$p" "$("$p" --version </dev/null 2>&1 | head -n 1 | tr -d '\t')"
  fi
done
`

// Runner is what a test found of the Conch runner there.
type Runner struct {
	// Want is the version this Conch would run there.
	Want string `json:"want"`
	// Present says that version is there already (else the next round
	// copies it on first use).
	Present bool `json:"present"`
	// Found are the versions there, oldest name first.
	Found []string `json:"found"`
}

// TestResult is a host after a test of its connection, and what was
// found of the runner there.
type TestResult struct {
	Host   store.Host `json:"host"`
	Runner Runner     `json:"runner"`
	// Took is how long the test took, in milliseconds.
	Took int64 `json:"took"`
}

// AcceptRequest accepts the key waiting for a host's OK
// (POST /api/hosts/:id/accept-key): the fingerprint shown to the person.
type AcceptRequest struct {
	Fingerprint string `json:"fingerprint"`
}

// Test connects to the host and finds who Conch runs as there, the
// system, the runner and the coding-agent CLIs. What the connection met
// (an unknown or changed key, a password prompt) is the host's status,
// not an error: the error is for a host that is not there to test.
//
// A key accepted while the test ran makes what it met stale: it tests
// again rather than show the key as unknown once more.
func (s *Service) Test(ctx context.Context, id string) (TestResult, error) {
	start := time.Now()
	for {
		res, stale, err := s.test(ctx, id)
		if !stale {
			res.Took = time.Since(start).Milliseconds()
			return res, err
		}
	}
}

// test is one try of Test; stale says a key was accepted since it began
// and it met the key as unknown, and nothing was stored.
func (s *Service) test(ctx context.Context, id string) (_ TestResult, stale bool, _ error) {
	s.mu.Lock()
	h, err := s.get(id)
	if err != nil {
		s.mu.Unlock()
		return TestResult{}, false, err
	}
	snap, accepts := *h, s.accepts[id]
	s.mu.Unlock()
	t, err := ssh.ParseTarget(snap.Target)
	if err != nil {
		return TestResult{}, false, err
	}
	res, runErr := s.cfg.SSH.Run(ctx, t, probe)
	if runErr != nil && ctx.Err() != nil {
		return TestResult{}, false, fmt.Errorf("test %s: %w", snap.Name, ctx.Err())
	}
	var key ssh.Key
	var scanErr error
	unknown := kindOf(runErr) == ssh.UnknownKey
	if unknown {
		var e *ssh.Error
		errors.As(runErr, &e)
		key, scanErr = s.cfg.SSH.Scan(ctx, t, e.KeyType)
	}
	if s.probed != nil {
		s.probed()
	}
	now := s.cfg.Now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.get(id)
	if err != nil {
		return TestResult{}, false, err
	}
	if cur.Target != snap.Target {
		return TestResult{}, false, fmt.Errorf("%w: host %s was pointed at %s while it was tested; test it again", ErrConflict, snap.Name, cur.Target)
	}
	if unknown && s.accepts[id] != accepts {
		return TestResult{}, true, nil
	}
	next := *cur
	next.TestedAt = &now
	runner := Runner{Want: s.cfg.Version, Found: []string{}}
	if runErr == nil {
		runner = s.found(&next, string(res.Stdout))
	} else {
		noteFailure(&next, runErr, key, scanErr)
	}
	stored, err := s.put(next)
	if err != nil {
		return TestResult{}, false, fmt.Errorf("test %s: %w", snap.Name, err)
	}
	return TestResult{Host: stored, Runner: runner}, false, nil
}

// found reads the probe's lines into h.
func (s *Service) found(h *store.Host, out string) Runner {
	r := Runner{Want: s.cfg.Version, Found: []string{}}
	h.Status, h.Reason, h.Fingerprint, h.PendingKey, h.Since = store.HostReady, "", "", "", nil
	h.Providers, h.Version = []store.HostProvider{}, ""
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		switch {
		case f[0] == "system" && len(f) == 2:
			h.System = f[1]
		case f[0] == "user" && len(f) == 2:
			h.User = f[1]
		case f[0] == "home" && len(f) == 2:
			h.Home = f[1]
		case f[0] == "runner" && len(f) == 2:
			r.Found = append(r.Found, f[1])
		case f[0] == "cli" && len(f) == 4 && slices.Contains(Agents, f[1]):
			h.Providers = append(h.Providers, store.HostProvider{ID: f[1], Path: f[2], Version: f[3]})
		}
	}
	if slices.Contains(r.Found, r.Want) {
		r.Present, h.Version = true, r.Want
	} else if n := len(r.Found); n > 0 {
		h.Version = r.Found[n-1]
	}
	return r
}

// noteFailure puts why the connection failed into h.
func noteFailure(h *store.Host, err error, key ssh.Key, scanErr error) {
	h.Fingerprint, h.PendingKey = "", ""
	h.Reason = errcode.Sentence(err)
	switch kindOf(err) {
	case ssh.UnknownKey:
		h.Status = store.HostUnknownKey
		if scanErr != nil {
			h.Reason = errcode.Sentence(fmt.Errorf("%w; %w", err, scanErr))
			return
		}
		h.Fingerprint, h.PendingKey = key.Fingerprint, key.Line
		h.Reason = errcode.Sentence(fmt.Errorf("the host key of %s is not known yet; its fingerprint is %s: check it against the host's own (ssh-keygen -lf on a file in /etc/ssh there) and accept it to connect", h.Name, key.Fingerprint))
	case ssh.ChangedKey:
		h.Status = store.HostKeyChanged
	case ssh.NoKey:
		h.Status = store.HostNoKey
	default:
		h.Status = store.HostUnreachable
	}
}

func kindOf(err error) ssh.Kind {
	var e *ssh.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// AcceptKey accepts the key waiting for the host's OK, if fingerprint is
// that key's: it goes into Conch's known_hosts, and connections waiting
// for it go on. Any other fingerprint, or none waiting (a second accept
// of the same key among them), is a conflict.
func (s *Service) AcceptKey(id string, req AcceptRequest) (store.Host, error) {
	if !strings.HasPrefix(req.Fingerprint, "SHA256:") || len(req.Fingerprint) > 100 || strings.ContainsAny(req.Fingerprint, " \t\r\n") {
		return store.Host{}, fmt.Errorf("%w: a fingerprint looks like SHA256:… as the host's test showed it, not %q", ErrInvalid, req.Fingerprint)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.get(id)
	if err != nil {
		return store.Host{}, err
	}
	switch {
	case h.Fingerprint == "":
		return store.Host{}, fmt.Errorf("%w: no key of %s waits to be accepted (accepted already, or never shown); test it to see where it stands", ErrConflict, h.Name)
	case h.Fingerprint != req.Fingerprint:
		return store.Host{}, fmt.Errorf("%w: the key waiting for %s is %s, not %s; test it again and check the fingerprint shown", ErrConflict, h.Name, h.Fingerprint, req.Fingerprint)
	}
	if err := s.cfg.SSH.Accept(ssh.Key{Line: h.PendingKey, Fingerprint: h.Fingerprint}); err != nil {
		return store.Host{}, fmt.Errorf("accept the key of %s: %w", h.Name, err)
	}
	next := *h
	next.Fingerprint, next.PendingKey = "", ""
	next.Status, next.Reason = store.HostNew, "Its key "+req.Fingerprint+" was accepted; test the connection."
	stored, err := s.put(next)
	if err != nil {
		return store.Host{}, fmt.Errorf("accept the key of %s: %w", h.Name, err)
	}
	s.accepts[id]++
	s.wake(id)
	return stored, nil
}

// wake lets the connections waiting on id's key try again; call with
// s.mu held.
func (s *Service) wake(id string) {
	if ch, ok := s.accepted[id]; ok {
		close(ch)
		delete(s.accepted, id)
	}
}

// Run runs script with /bin/sh on the host. While the host's key is
// unknown it waits for the person to accept it (the key and its
// fingerprint are shown on the host), and goes on once they have; a
// changed key or a refused login ends it at once with the reason.
func (s *Service) Run(ctx context.Context, id, script string) (ssh.Result, error) {
	return s.RunInput(ctx, id, script, nil)
}

// RunInput is Run with input after the script on its stdin (nil: none).
// Input can be read only once: send it to a host that answered a Run
// already, so that no key waits to be accepted.
func (s *Service) RunInput(ctx context.Context, id, script string, input io.Reader) (ssh.Result, error) {
	for {
		t, err := s.target(id)
		if err != nil {
			return ssh.Result{}, err
		}
		var res ssh.Result
		if input == nil {
			res, err = s.cfg.SSH.Run(ctx, t, script)
		} else {
			res, err = s.cfg.SSH.RunInput(ctx, t, script, input)
		}
		if kindOf(err) != ssh.UnknownKey {
			return res, err
		}
		if _, terr := s.Test(ctx, id); terr != nil {
			return ssh.Result{}, terr
		}
		if err := s.await(ctx, id); err != nil {
			return ssh.Result{}, err
		}
	}
}

// Forward makes local a socket that reaches remote there, over the
// host's shared connection (which a Run opened).
func (s *Service) Forward(ctx context.Context, id, local, remote string) error {
	t, err := s.target(id)
	if err != nil {
		return err
	}
	return s.cfg.SSH.Forward(ctx, t, local, remote)
}

// target is where host id is reached now.
func (s *Service) target(id string) (ssh.Target, error) {
	s.mu.Lock()
	h, err := s.get(id)
	if err != nil {
		s.mu.Unlock()
		return ssh.Target{}, err
	}
	target := h.Target
	s.mu.Unlock()
	return ssh.ParseTarget(target)
}

// await waits until id's key is accepted (or the host removed).
func (s *Service) await(ctx context.Context, id string) error {
	s.mu.Lock()
	h, err := s.get(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if h.Fingerprint == "" {
		s.mu.Unlock()
		if h.Status == store.HostUnknownKey {
			return errors.New(h.Reason)
		}
		return nil
	}
	ch, ok := s.accepted[id]
	if !ok {
		ch = make(chan struct{})
		s.accepted[id] = ch
	}
	done := s.life.Context().Done()
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the key of %s to be accepted: %w", id, ctx.Err())
	case <-done:
		return errClosed
	}
}

func sortHosts(hs []store.Host) {
	slices.SortFunc(hs, func(a, b store.Host) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Reached records what reaching the host for its tasks came to: err nil,
// it answered (ready); else it is unreachable since the first of the
// failures in a row, for the reason err gives. A key's or a login's
// trouble keeps the status a test gave it. Nothing is stored when nothing
// changed.
func (s *Service) Reached(id string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, gerr := s.get(id)
	if gerr != nil {
		return
	}
	next := *h
	if err == nil {
		if next.Status == store.HostReady && next.Since == nil {
			return
		}
		next.Status, next.Reason, next.Since = store.HostReady, "", nil
	} else {
		switch k := kindOf(err); {
		case k == ssh.UnknownKey:
			return // its test showed the key, which waits for the person
		case k != "" && k != ssh.Unreachable && k != ssh.Failed:
			noteFailure(&next, err, ssh.Key{}, nil)
		default:
			next.Status, next.Reason = store.HostUnreachable, errcode.Sentence(err)
		}
		if next.Since == nil {
			now := s.cfg.Now().UTC()
			next.Since = &now
		}
		if next.Status == h.Status && next.Reason == h.Reason {
			return
		}
	}
	if _, perr := s.put(next); perr != nil {
		s.cfg.Log.Warn("could not store how a host was reached", "host", id, "err", perr)
	}
}

// Git is how git reaches host id: the environment that makes it use
// Conch's ssh (GIT_SSH_COMMAND), and the ssh URL of path there.
func (s *Service) Git(ctx context.Context, id, path string) (env []string, url string, err error) {
	t, err := s.target(id)
	if err != nil {
		return nil, "", err
	}
	cmd, err := s.cfg.SSH.GitCommand(ctx, t)
	if err != nil {
		return nil, "", err
	}
	return []string{"GIT_SSH_COMMAND=" + cmd, "GIT_SSH_VARIANT=ssh"}, t.URL(path), nil
}
