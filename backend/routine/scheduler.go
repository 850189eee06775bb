package routine

import (
	"context"
	"fmt"
	"time"

	"conch/backend/store"
)

// maxWait bounds one sleep of the scheduler, so a clock that jumps (the
// computer slept, the time was set) is noticed within it.
const maxWait = time.Minute

// Start loads the routines, settles the runs missed while Conch was off
// (one catch-up run now for a routine with catchUp, none for the others)
// and starts the scheduler. Start it after the runner and the hand-off:
// a run needs both.
func (s *Service) Start(ctx context.Context) error {
	rs, err := s.cfg.Store.Routines()
	if err != nil && len(rs) == 0 {
		return fmt.Errorf("start routines: %w", err)
	} else if err != nil {
		s.cfg.Log.Error("some routines could not be read", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	runCtx, err := s.life.Start(ctx)
	if err != nil {
		return fmt.Errorf("start routines: %w", err)
	}
	for _, r := range rs {
		s.routines[r.ID] = &r
	}
	s.catchUp(runCtx, s.cfg.Clock.Now())
	s.life.WG.Add(1)
	go s.loop(runCtx)
	return nil
}

// Stop ends the scheduler and waits for it; runs already started are the
// runner's. Safe twice and before Start.
func (s *Service) Stop() { s.life.Stop(&s.mu, nil) }

// catchUp settles what came due while Conch was off; call with s.mu held.
func (s *Service) catchUp(ctx context.Context, now time.Time) {
	for _, r := range s.sorted() {
		due, ok := s.due(*r, now)
		if !ok || r.Paused {
			continue
		}
		next := *r
		next.Checked = now.UTC()
		if !r.CatchUp {
			next.SkippedAt, next.Skipped = nil, ""
			if err := s.put(next); err != nil {
				s.cfg.Log.Error("skip a missed run", "routine", r.ID, "err", err)
			}
			continue
		}
		s.fire(ctx, next, due)
	}
}

// sorted are the routines oldest first; call with s.mu held.
func (s *Service) sorted() []*store.Routine {
	rs, _ := s.cfg.Store.Routines()
	out := make([]*store.Routine, 0, len(rs))
	for _, r := range rs {
		if kept, ok := s.routines[r.ID]; ok {
			out = append(out, kept)
		}
	}
	return out
}

// due is r's first run after its last check, and whether it is due at now.
func (s *Service) due(r store.Routine, now time.Time) (time.Time, bool) {
	loc, err := s.zone(r.TimeZone)
	if err != nil {
		loc = s.cfg.Location
	}
	sched, err := Parse(r.Schedule, true)
	if err != nil {
		return time.Time{}, false
	}
	next := sched.Next(r.Checked, loc)
	return next, !next.IsZero() && !next.After(now)
}

// loop sleeps until the next run comes due (or the routines change) and
// starts what is due then.
func (s *Service) loop(ctx context.Context) {
	defer s.life.WG.Done()
	for {
		wait := s.untilNext()
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-s.cfg.Clock.After(wait):
			s.Tick(ctx)
		}
	}
}

// untilNext is how long until the earliest run comes due, at most maxWait.
func (s *Service) untilNext() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	wait := maxWait
	for _, r := range s.routines {
		if r.Paused {
			continue
		}
		if next, _ := s.due(*r, now); !next.IsZero() {
			wait = min(wait, max(next.Sub(now), 0))
		}
	}
	return wait
}

// Tick starts every run due now: each routine's run once, however many of
// its times passed (the computer slept), skipped when the last still
// works. The scheduler calls it; tests call it with their clock.
func (s *Service) Tick(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.life.Open() {
		return
	}
	now := s.cfg.Clock.Now()
	for _, r := range s.sorted() {
		due, ok := s.due(*r, now)
		if !ok || r.Paused {
			continue
		}
		next := *r
		next.Checked = now.UTC()
		s.fire(ctx, next, due)
	}
}

// fire starts r's run that came due at due, or records it skipped when
// the last run still works; call with s.mu held.
func (s *Service) fire(ctx context.Context, r store.Routine, due time.Time) {
	if busy := s.busy(r); busy != "" {
		s.skip(r, fmt.Sprintf("The run due %s did not start: %s.", due.Format("Mon 15:04"), busy), due)
		return
	}
	r.SkippedAt, r.Skipped = nil, ""
	if _, err := s.start(ctx, r); err != nil {
		s.cfg.Log.Error("start a routine's run", "routine", r.ID, "err", err)
		// Counted as handled: a run that cannot start is not tried again
		// every tick.
		s.skip(r, "The run due "+due.Format("Mon 15:04")+" could not start: "+err.Error(), due)
	}
}
