package agentcli

import (
	"sync"
	"time"
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
