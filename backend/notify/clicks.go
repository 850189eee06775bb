package notify

import (
	"log/slog"
	"sync"
)

// maxEarly is how many clicks a notifier keeps while nothing handles them
// yet: a person pressing buttons while Conch starts presses a few, not more.
const maxEarly = 16

// click is one action that came back from the platform.
type click struct{ tag, action string }

// clicks hands the platform's clicks and buttons to the ActionFunc set with
// handle. Those that come before it is set (the click that started Conch,
// or one pressed while it starts) are kept and handed on once it is, in the
// order they came; so a notifier can be opened before the service it calls
// exists, and nothing reaches a service that is not there yet.
type clicks struct {
	// mu is held while f runs too: clicks are handed on one at a time and
	// in order, and none overtakes the early ones being handed on.
	mu    sync.Mutex
	f     ActionFunc
	early []click
}

// deliver hands one click to the handler, or keeps it until there is one.
func (c *clicks) deliver(tag, action string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != nil {
		c.f(tag, action)
		return
	}
	if len(c.early) >= maxEarly {
		slog.Warn("notification click dropped: Conch is not ready for it yet", "tag", tag, "action", action)
		return
	}
	c.early = append(c.early, click{tag, action})
}

// handle sets the handler (nil: keep clicks again) and hands it the clicks
// kept meanwhile.
func (c *clicks) handle(f ActionFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.f = f
	if f == nil {
		return
	}
	early := c.early
	c.early = nil
	for _, k := range early {
		f(k.tag, k.action)
	}
}

// waiting is how many clicks wait for a handler.
func (c *clicks) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.early)
}
