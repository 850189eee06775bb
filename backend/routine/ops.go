package routine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"conch/backend/store"
	"conch/backend/task"
)

// errClosed is an operation asked for when Conch is not running routines.
var errClosed = errors.New("routines are not being kept now (Conch is starting or closing)")

// get is the routine with id; call with s.mu held.
func (s *Service) get(id string) (*store.Routine, error) {
	if !s.life.Open() {
		return nil, errClosed
	}
	r, ok := s.routines[id]
	if !ok {
		return nil, fmt.Errorf("routine %q: %w", id, ErrNotFound)
	}
	return r, nil
}

// put stores r and keeps it; call with s.mu held. Nothing is kept unless
// it was stored.
func (s *Service) put(r store.Routine) error {
	r.Rev++
	r.UpdatedAt = s.cfg.Clock.Now().UTC()
	if err := s.cfg.Store.PutRoutine(r); err != nil {
		return err
	}
	s.routines[r.ID] = &r
	s.poke()
	return nil
}

// poke tells the scheduler the routines changed.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// List returns every routine's card, oldest first.
func (s *Service) List() (List, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.life.Open() {
		return List{}, errClosed
	}
	l := List{Routines: []Card{}, Zone: ZoneName(s.cfg.Location)}
	rs, err := s.cfg.Store.Routines()
	if err != nil && len(rs) == 0 {
		return List{}, err
	}
	for _, r := range rs {
		if kept, ok := s.routines[r.ID]; ok {
			l.Routines = append(l.Routines, s.card(*kept))
		}
	}
	return l, nil
}

// Get returns one routine's card.
func (s *Service) Get(id string) (Card, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return Card{}, err
	}
	return s.card(*r), nil
}

// card is r as its card shows it; call with s.mu held.
func (s *Service) card(r store.Routine) Card {
	loc, err := s.zone(r.TimeZone)
	if err != nil {
		loc = s.cfg.Location
	}
	c := Card{Routine: r, Words: Words(r.Schedule), Zone: ZoneName(loc)}
	if !r.Paused {
		if sched, err := Parse(r.Schedule, true); err == nil {
			if next := sched.Next(s.cfg.Clock.Now(), loc); !next.IsZero() {
				c.Next = &next
			}
		}
	}
	if r.LastTaskID != "" && s.cfg.Tasks != nil {
		if t, err := s.cfg.Tasks.Get(r.LastTaskID); err == nil {
			c.Last = &LastRun{TaskID: t.ID, ConversationID: t.ConversationID, Status: t.Status, At: t.CreatedAt,
				Summary: t.Summary, Error: t.Error}
		}
	}
	return c
}

// Create checks and stores a new routine; its first run is its schedule's
// next time after now.
func (s *Service) Create(ctx context.Context, req CreateRequest) (Card, error) {
	now := s.cfg.Clock.Now().UTC()
	r := store.Routine{
		ID: store.NewID(), Name: req.Name, Kind: req.Kind, Text: req.Text, Schedule: req.Schedule, TimeZone: req.TimeZone,
		Cwd: req.Cwd, Mode: task.Mode(req.Mode), Provider: req.Provider, Model: req.Model, Host: req.Host,
		CatchUp: req.CatchUp, Paused: req.Paused, FromConversationID: req.FromConversationID,
		Checked: now, CreatedAt: now,
	}
	if err := s.check(ctx, &r); err != nil {
		return Card{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.life.Open() {
		return Card{}, errClosed
	}
	if err := s.put(r); err != nil {
		return Card{}, fmt.Errorf("create routine: %w", err)
	}
	return s.card(*s.routines[r.ID]), nil
}

// Patch changes the fields req sends, checked as a new routine is. A
// changed schedule, or a resume, counts from now: what came due while it
// was paused is not run.
func (s *Service) Patch(ctx context.Context, id string, req PatchRequest) (Card, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.get(id)
	if err != nil {
		return Card{}, err
	}
	if req.Rev != nil && *req.Rev != cur.Rev {
		return Card{}, fmt.Errorf("the routine changed since you read it (rev %d, now %d); reload it and try again: %w", *req.Rev, cur.Rev, ErrConflict)
	}
	r := *cur
	wasPaused, oldSchedule, oldZone := r.Paused, r.Schedule, r.TimeZone
	apply(&r, req)
	if err := s.check(ctx, &r); err != nil {
		return Card{}, err
	}
	if (wasPaused && !r.Paused) || r.Schedule != oldSchedule || r.TimeZone != oldZone {
		r.Checked = s.cfg.Clock.Now().UTC()
	}
	if err := s.put(r); err != nil {
		return Card{}, fmt.Errorf("change routine %s: %w", id, err)
	}
	return s.card(*s.routines[id]), nil
}

func apply(r *store.Routine, req PatchRequest) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&r.Name, req.Name)
	set(&r.Text, req.Text)
	set(&r.Schedule, req.Schedule)
	set(&r.TimeZone, req.TimeZone)
	set(&r.Cwd, req.Cwd)
	set(&r.Provider, req.Provider)
	set(&r.Model, req.Model)
	set(&r.Host, req.Host)
	if req.Kind != nil {
		r.Kind = *req.Kind
	}
	if req.Mode != nil {
		r.Mode = task.Mode(*req.Mode)
	}
	if req.CatchUp != nil {
		r.CatchUp = *req.CatchUp
	}
	if req.Paused != nil {
		r.Paused = *req.Paused
	}
}

// Delete removes a routine; the tasks and chats of its runs stay, and a
// run still working carries on.
func (s *Service) Delete(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(id); err != nil {
		return err
	}
	if err := s.cfg.Store.DeleteRoutine(id); err != nil {
		return fmt.Errorf("delete routine %s: %w", id, err)
	}
	delete(s.routines, id)
	s.poke()
	return nil
}

// RunNow starts a run at once, paused or not; it is refused with a
// conflict while the last run still works (runs never overlap). Its
// schedule is unchanged.
func (s *Service) RunNow(ctx context.Context, id string) (task.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return task.Task{}, err
	}
	if busy := s.busy(*r); busy != "" {
		return task.Task{}, fmt.Errorf("%s; it can run again once that one ends: %w", busy, ErrConflict)
	}
	return s.start(ctx, *r)
}

// busy says why r cannot start a run now ("" when it can): its last
// run's task has not finished.
func (s *Service) busy(r store.Routine) string {
	if r.LastTaskID == "" || s.cfg.Tasks == nil {
		return ""
	}
	t, err := s.cfg.Tasks.Get(r.LastTaskID)
	if err != nil || t.Status.Finished() {
		return ""
	}
	return "its last run is still " + t.Status.Words()
}

// start starts one run of r and records it; call with s.mu held.
func (s *Service) start(ctx context.Context, r store.Routine) (task.Task, error) {
	if s.launch == nil {
		return task.Task{}, errors.New("routines cannot start runs here")
	}
	t, err := s.launch.StartRoutine(ctx, Run{RoutineID: r.ID, Name: r.Name, Kind: r.Kind, Text: r.Text,
		Provider: r.Provider, Model: r.Model, Mode: r.Mode, Cwd: r.Cwd})
	if err != nil {
		return task.Task{}, fmt.Errorf("run routine %q: %w", r.Name, err)
	}
	at := s.cfg.Clock.Now().UTC()
	r.LastTaskID, r.LastRunAt = t.ID, &at
	r.Runs++
	if err := s.put(r); err != nil {
		return t, fmt.Errorf("record the run of routine %q: %w", r.Name, err)
	}
	return t, nil
}

// skip records that a run came due while the last still worked.
func (s *Service) skip(r store.Routine, why string, at time.Time) {
	at = at.UTC()
	r.SkippedAt, r.Skipped = &at, why
	if err := s.put(r); err != nil {
		s.cfg.Log.Error("record a skipped run", "routine", r.ID, "err", err)
	}
}
