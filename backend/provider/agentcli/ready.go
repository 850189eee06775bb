package agentcli

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"conch/backend/internal/procgroup"
)

// readiness is what a probe learned.
type readiness struct {
	ready  bool
	reason string
	model  string   // the default model
	models []string // the models it offers
}

// readyTTL is how long a probe's "ready" is kept, and notReadyTTL how
// long anything else is. Info is asked before every turn, and a probe
// starts a process (Claude Code's `auth status` takes about half a
// second), so a Send would wait on it each time; a CLI that stops being
// ready meanwhile fails its turn saying why, while one that becomes ready
// (the person just logged in) should show so soon.
const (
	readyTTL    = 2 * time.Minute
	notReadyTTL = 15 * time.Second
)

// readyCache keeps a probe's answer (see readyTTL); probes do not
// overlap. The zero value is ready.
type readyCache struct {
	mu  sync.Mutex
	at  time.Time
	got readiness
	now func() time.Time // time.Now unless a test sets it
}

// get returns the kept answer, or probes; ok is false when the probe
// could not tell (it is then not kept).
func (c *readyCache) get(probe func() (readiness, bool)) (readiness, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	ttl := notReadyTTL
	if c.got.ready {
		ttl = readyTTL
	}
	if !c.at.IsZero() && now().Sub(c.at) < ttl {
		return c.got, true
	}
	got, ok := probe()
	if ok {
		c.got, c.at = got, now()
	}
	return got, ok
}

// probeTimeout bounds a login probe such as `claude auth status`.
const probeTimeout = 3 * time.Second

// probe runs a cheap status command with a timeout. ok is false when it
// could not tell (it did not start or ran out of time).
func probe(ctx context.Context, cfg Config, bin string, args ...string) (code int, out string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cfg.environ()
	cmd.SysProcAttr = procgroup.Attr()
	cmd.Cancel = func() error {
		procgroup.Signal(cmd.Process.Pid, syscall.SIGKILL)
		return nil
	}
	cmd.WaitDelay = time.Second
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		return 0, "", false
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 0, "", false
	}
	return cmd.ProcessState.ExitCode(), strings.TrimSpace(buf.String()), true
}
