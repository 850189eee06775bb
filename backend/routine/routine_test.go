package routine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/store"
	"conch/backend/task"
)

// fakeClock is a clock the test moves; timers fire as it passes them.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	return ch
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

// runs is the launcher and the tasks: each run is a task the test ends.
type runs struct {
	mu      sync.Mutex
	started []Run
	status  map[string]task.Status
	at      []time.Time
	clock   *fakeClock
}

func (r *runs) StartRoutine(_ context.Context, run Run) (task.Task, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := fmt.Sprintf("task-%d", len(r.started)+1)
	r.started = append(r.started, run)
	r.at = append(r.at, r.clock.Now())
	r.status[id] = task.Running
	return task.Task{ID: id, Status: task.Running, RoutineID: run.RoutineID}, nil
}

func (r *runs) Get(id string) (task.Task, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.status[id]
	if !ok {
		return task.Task{}, errors.New("no such task")
	}
	return task.Task{ID: id, Status: st}, nil
}

func (r *runs) finish(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status[id] = task.Done
}

func (r *runs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.started)
}

type bench struct {
	svc   *Service
	st    *store.Bolt
	path  string
	clock *fakeClock
	runs  *runs
	dir   string
	loc   *time.Location
}

// setup opens a real store and a service on a fake clock in New York,
// started at start.
func setup(t *testing.T, start time.Time) *bench {
	t.Helper()
	dir := t.TempDir()
	b := &bench{path: filepath.Join(dir, "conch.db"), dir: dir, loc: newYork(t), clock: &fakeClock{now: start}}
	b.runs = &runs{status: map[string]task.Status{}, clock: b.clock}
	b.open(t)
	return b
}

func (b *bench) open(t *testing.T) {
	t.Helper()
	st, err := store.Open(b.path)
	if err != nil {
		t.Fatal(err)
	}
	b.st = st
	b.svc = New(Config{Store: st, Tasks: b.runs, Clock: b.clock, Location: b.loc, Home: b.dir})
	b.svc.RunWith(b.runs)
	if err := b.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
}

func (b *bench) close() {
	b.svc.Stop()
	_ = b.st.Close()
}

func (b *bench) at(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.ParseInLocation("2006-01-02 15:04", s, b.loc)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func (b *bench) make(t *testing.T, req CreateRequest) Card {
	t.Helper()
	if req.Kind == "" {
		req.Kind = store.RoutineCommand
	}
	if req.Text == "" {
		req.Text = "echo hello"
	}
	c, err := b.svc.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tick moves the clock to s and runs what is due.
func (b *bench) tick(t *testing.T, s string) {
	t.Helper()
	b.clock.set(b.at(t, s))
	b.svc.Tick(context.Background())
}

// A 9:00 routine runs at 9:00 local on both sides of the spring change,
// once a day; its card shows the next run in words and time.
func TestARoutineRunsOnItsScheduleAcrossDaylightSaving(t *testing.T) {
	b := setup(t, time.Date(2026, 3, 7, 8, 0, 0, 0, newYork(t)))
	c := b.make(t, CreateRequest{Name: "Standup", Schedule: "every day at 9:00"})
	if c.Words != "every day at 9:00" || c.Routine.Schedule != "0 9 * * *" || c.Next == nil || !c.Next.Equal(b.at(t, "2026-03-07 09:00")) {
		t.Fatalf("card: %+v", c)
	}
	b.tick(t, "2026-03-07 08:59")
	if b.runs.count() != 0 {
		t.Fatal("ran early")
	}
	b.tick(t, "2026-03-07 09:00")
	b.tick(t, "2026-03-07 09:00")
	if b.runs.count() != 1 {
		t.Fatalf("runs at 9:00: %d", b.runs.count())
	}
	b.runs.finish("task-1")
	b.tick(t, "2026-03-08 08:59")
	b.tick(t, "2026-03-08 09:00")
	if b.runs.count() != 2 {
		t.Fatalf("runs on the spring-forward day: %d", b.runs.count())
	}
	if got := b.runs.at[1].UTC(); !got.Equal(time.Date(2026, 3, 8, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("the second run was at %s UTC, want 13:00 (9:00 EDT)", got)
	}
	card, err := b.svc.Get(c.Routine.ID)
	if err != nil || card.Last == nil || card.Last.TaskID != "task-2" || card.Last.Status != task.Running || card.Routine.Runs != 2 {
		t.Fatalf("after two runs: %+v %v", card, err)
	}
}

// The scheduler's own loop wakes for a run when the clock reaches it.
func TestTheLoopStartsARunWhenItComesDue(t *testing.T) {
	b := setup(t, time.Date(2026, 6, 1, 8, 0, 0, 0, newYork(t)))
	b.make(t, CreateRequest{Schedule: "every 15 minutes"})
	deadline := time.Now().Add(5 * time.Second)
	for b.runs.count() == 0 {
		b.clock.set(b.clock.Now().Add(time.Minute))
		if time.Now().After(deadline) {
			t.Fatal("the loop never ran the routine")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if got := b.runs.at[0]; got.Before(b.at(t, "2026-06-01 08:15")) {
		t.Fatalf("ran at %s, before it was due", got)
	}
}

// A run missed while Conch was off runs once at start with catchUp, and
// not at all without; either way the schedule then goes on.
func TestMissedRunsCatchUpOnceOrNot(t *testing.T) {
	b := setup(t, time.Date(2026, 6, 1, 8, 0, 0, 0, newYork(t)))
	with := b.make(t, CreateRequest{Name: "with", Schedule: "every day at 9:00", CatchUp: true})
	without := b.make(t, CreateRequest{Name: "without", Schedule: "every day at 9:00"})
	b.close()
	b.clock.set(b.at(t, "2026-06-03 10:00")) // three 9:00s missed
	b.open(t)
	if b.runs.count() != 1 || b.runs.started[0].RoutineID != with.Routine.ID {
		t.Fatalf("catch-up runs: %+v", b.runs.started)
	}
	b.runs.finish("task-1")
	b.tick(t, "2026-06-03 10:01")
	if b.runs.count() != 1 {
		t.Fatal("a missed run ran again, or one without catch-up ran")
	}
	card, _ := b.svc.Get(without.Routine.ID)
	if card.Next == nil || !card.Next.Equal(b.at(t, "2026-06-04 09:00")) || card.Last != nil {
		t.Fatalf("without catch-up: %+v", card)
	}
	b.tick(t, "2026-06-04 09:00")
	if b.runs.count() != 3 {
		t.Fatalf("the next day's runs: %d", b.runs.count())
	}
}

// A run that comes due while the last still works is skipped, and the
// card says so; run now is refused then too; once it ends both work.
func TestRunsOfOneRoutineNeverOverlap(t *testing.T) {
	b := setup(t, time.Date(2026, 6, 1, 8, 0, 0, 0, newYork(t)))
	c := b.make(t, CreateRequest{Schedule: "hourly"})
	b.tick(t, "2026-06-01 09:00")
	b.tick(t, "2026-06-01 10:00")
	if b.runs.count() != 1 {
		t.Fatalf("runs: %d", b.runs.count())
	}
	card, _ := b.svc.Get(c.Routine.ID)
	if card.Routine.SkippedAt == nil || !strings.Contains(card.Routine.Skipped, "still working") {
		t.Fatalf("the card does not say a run was skipped: %+v", card.Routine)
	}
	if _, err := b.svc.RunNow(context.Background(), c.Routine.ID); !errors.Is(err, ErrConflict) {
		t.Fatalf("run now while the last works: %v", err)
	}
	b.runs.finish("task-1")
	if _, err := b.svc.RunNow(context.Background(), c.Routine.ID); err != nil {
		t.Fatal(err)
	}
	b.runs.finish("task-2")
	b.tick(t, "2026-06-01 11:00")
	if b.runs.count() != 3 {
		t.Fatalf("runs after the last ended: %d", b.runs.count())
	}
	if card, _ := b.svc.Get(c.Routine.ID); card.Routine.SkippedAt != nil {
		t.Fatalf("a run that started still says skipped: %+v", card.Routine)
	}
}

// Pausing stops new runs only: the one working carries on, nothing runs
// while paused, and what came due then is not run on resume.
func TestPausingStopsNewRunsOnly(t *testing.T) {
	b := setup(t, time.Date(2026, 6, 1, 8, 0, 0, 0, newYork(t)))
	c := b.make(t, CreateRequest{Schedule: "hourly", CatchUp: true})
	b.tick(t, "2026-06-01 09:00")
	yes, no := true, false
	p, err := b.svc.Patch(context.Background(), c.Routine.ID, PatchRequest{Paused: &yes})
	if err != nil || !p.Routine.Paused || p.Next != nil {
		t.Fatalf("paused: %+v %v", p, err)
	}
	if st, _ := b.runs.Get("task-1"); st.Status != task.Running {
		t.Fatal("pausing touched the working run")
	}
	b.runs.finish("task-1")
	b.tick(t, "2026-06-01 10:00")
	b.tick(t, "2026-06-01 11:00")
	b.close()
	b.open(t) // paused across a restart: no catch-up either
	if b.runs.count() != 1 {
		t.Fatalf("runs while paused: %d", b.runs.count())
	}
	b.clock.set(b.at(t, "2026-06-01 11:30"))
	if p, err = b.svc.Patch(context.Background(), c.Routine.ID, PatchRequest{Paused: &no}); err != nil || p.Next == nil || !p.Next.Equal(b.at(t, "2026-06-01 12:00")) {
		t.Fatalf("resumed: %+v %v", p, err)
	}
	b.svc.Tick(context.Background())
	if b.runs.count() != 1 {
		t.Fatal("resuming ran what came due while paused")
	}
	b.tick(t, "2026-06-01 12:00")
	if b.runs.count() != 2 {
		t.Fatalf("runs after resume: %d", b.runs.count())
	}
}

// Bad routines are refused at the edge, each saying what is wrong.
func TestARoutineIsCheckedAtTheEdge(t *testing.T) {
	b := setup(t, time.Date(2026, 6, 1, 8, 0, 0, 0, newYork(t)))
	cases := []struct {
		req  CreateRequest
		want string
	}{
		{CreateRequest{Kind: "command", Text: "x", Schedule: "now and then"}, "every weekday at 9:00"},
		{CreateRequest{Kind: "command", Text: " ", Schedule: "hourly"}, "text is empty"},
		{CreateRequest{Kind: "poem", Text: "x", Schedule: "hourly"}, "unknown kind"},
		{CreateRequest{Kind: "prompt", Text: "x", Schedule: "hourly"}, "needs a provider"},
		{CreateRequest{Kind: "prompt", Text: "x", Schedule: "hourly", Provider: "shell"}, "make it a command"},
		{CreateRequest{Kind: "command", Text: "x", Schedule: "hourly", Provider: "claude"}, "runs on the shell"},
		{CreateRequest{Kind: "command", Text: "x", Schedule: "hourly", TimeZone: "Mars/Olympus"}, "unknown time zone"},
		{CreateRequest{Kind: "command", Text: "x", Schedule: "hourly", Host: "devbox"}, "this computer only"},
		{CreateRequest{Kind: "command", Text: "x", Schedule: "hourly", Cwd: "relative"}, "not an absolute path"},
		{CreateRequest{Kind: "command", Text: "x", Schedule: "hourly", Cwd: "/no/such/folder"}, "does not exist"},
		{CreateRequest{Kind: "command", Text: "x", Schedule: "hourly", Mode: "yolo"}, "unknown mode"},
		{CreateRequest{Kind: "command", Text: "x", Schedule: "*/5 * * * * *"}, "every weekday at 9:00"},
	}
	for _, c := range cases {
		_, err := b.svc.Create(context.Background(), c.req)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want invalid saying %q", c.req, err, c.want)
		}
	}
	if l, _ := b.svc.List(); len(l.Routines) != 0 {
		t.Fatalf("a refused routine was kept: %+v", l.Routines)
	}
	c := b.make(t, CreateRequest{Schedule: "0 9 * * 1-5", TimeZone: "Europe/Paris"})
	if c.Routine.Mode != task.Ask || c.Routine.Cwd != b.dir || c.Routine.Provider != task.ShellProvider || c.Zone != "Europe/Paris" {
		t.Fatalf("defaults: %+v", c)
	}
	if _, err := b.svc.Patch(context.Background(), "nope", PatchRequest{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("patch of nothing: %v", err)
	}
	bad := "sometimes"
	if _, err := b.svc.Patch(context.Background(), c.Routine.ID, PatchRequest{Schedule: &bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a bad patch: %v", err)
	}
	if got, _ := b.svc.Get(c.Routine.ID); got.Routine.Schedule != "0 9 * * 1-5" || got.Routine.Rev != 1 {
		t.Fatalf("a refused patch changed the routine: %+v", got.Routine)
	}
}

// Two clients at once: of two run-nows one starts a run and the other is
// refused; of two changes from one rev one lands; of two deletes one.
func TestTwoClientsAtOnce(t *testing.T) {
	b := setup(t, time.Date(2026, 6, 1, 8, 0, 0, 0, newYork(t)))
	c := b.make(t, CreateRequest{Schedule: "hourly"})
	both := func(op func() error) (ok, conflict, notFound int) {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = op() }()
		}
		wg.Wait()
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrConflict):
				conflict++
			case errors.Is(err, ErrNotFound):
				notFound++
			default:
				t.Errorf("unexpected: %v", err)
			}
		}
		return
	}
	if ok, conflict, _ := both(func() error { _, err := b.svc.RunNow(context.Background(), c.Routine.ID); return err }); ok != 1 || conflict != 1 {
		t.Fatalf("run now twice: %d ran, %d refused", ok, conflict)
	}
	rev := c.Routine.Rev + 1 // the run was recorded
	name := "renamed"
	if ok, conflict, _ := both(func() error {
		_, err := b.svc.Patch(context.Background(), c.Routine.ID, PatchRequest{Name: &name, Rev: &rev})
		return err
	}); ok != 1 || conflict != 1 {
		t.Fatalf("two changes from one rev: %d landed, %d refused", ok, conflict)
	}
	if ok, _, notFound := both(func() error { return b.svc.Delete(c.Routine.ID) }); ok != 1 || notFound != 1 {
		t.Fatalf("two deletes: %d, %d not found", ok, notFound)
	}
	if rs, _ := b.st.Routines(); len(rs) != 0 {
		t.Fatalf("a deleted routine is still stored: %+v", rs)
	}
}
