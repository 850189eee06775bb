// Package startstop is the start-and-stop state every long-lived service
// keeps, written once: Start once (a second Start, or one after Stop, is an
// error), Stop safe twice and before Start, and Stop ends the work Start
// began and waits for it.
package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStarted is returned by a second Start, or a Start after Stop.
var ErrStarted = errors.New("already started or stopped")

// State is embedded in (or kept by) a service. Its fields are guarded by
// the service's own lock, so the service reads them with the rest of its
// state in one step: Start, Open and Closed are called with that lock
// held; Stop takes it.
type State struct {
	started, closed bool
	ctx             context.Context
	cancel          context.CancelCauseFunc
	// WG counts the goroutines the service's work runs in; Stop waits for
	// them. Add to it only with the lock held and the state Open, so no
	// Add ever races Stop's Wait.
	WG sync.WaitGroup
}

// Start marks the service started and returns the context its work runs
// under: ctx's values without its cancel, ended by Stop. It returns
// ErrStarted if the service was started or stopped before.
func (s *State) Start(ctx context.Context) (context.Context, error) {
	if s.started || s.closed {
		return nil, ErrStarted
	}
	s.started = true
	s.ctx, s.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	return s.ctx, nil
}

// Open says the service has started and not been stopped.
func (s *State) Open() bool { return s.started && !s.closed }

// Closed says Stop has been called.
func (s *State) Closed() bool { return s.closed }

// Context is the context Start returned (nil before Start).
func (s *State) Context() context.Context { return s.ctx }

// Stop marks the service stopped, ends its work's context with cause (nil:
// context.Canceled) and waits for every goroutine counted in WG. It takes
// l, the service's lock, to mark it, and lets it go before waiting. A
// second Stop returns at once.
func (s *State) Stop(l sync.Locker, cause error) {
	l.Lock()
	if s.closed {
		l.Unlock()
		return
	}
	s.closed = true
	cancel := s.cancel
	l.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	s.WG.Wait()
}
