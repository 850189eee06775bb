package taskrun_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/pref"
	"conch/backend/procmark"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// revs follows the bus and checks that every task's revs only go up and
// that nothing is announced for a task after it was deleted.
type revs struct {
	t    *testing.T
	sub  *event.Subscription
	mu   sync.Mutex
	last map[string]int64
	gone map[string]bool
	bad  []string
	done chan struct{}
}

func followRevs(t *testing.T, bus *event.Bus) *revs {
	r := &revs{t: t, sub: bus.Subscribe(1 << 16), last: map[string]int64{}, gone: map[string]bool{}, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.sub.Done():
				return
			case ev := <-r.sub.C():
				r.mu.Lock()
				switch ev.Type {
				case event.TaskChanged:
					id := ev.Task.ID
					if r.gone[id] {
						r.bad = append(r.bad, "changed after it was deleted: "+id)
					}
					if ev.Task.Rev <= r.last[id] {
						r.bad = append(r.bad, "rev went from "+itoa(r.last[id])+" to "+itoa(ev.Task.Rev)+" for "+id)
					}
					r.last[id] = ev.Task.Rev
				case event.TaskDeleted:
					r.gone[ev.ID] = true
				}
				r.mu.Unlock()
			}
		}
	}()
	return r
}

// check drains what was published and fails on anything out of order.
func (r *revs) check() {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(r.sub.C()) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-r.sub.Done():
		r.t.Fatal("the rev follower fell behind and was dropped")
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bad {
		r.t.Error(b)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Try again clicked by six clients at once: a new run starts while the
// last one is still cleaning up. Conch must not crash, and the task ends
// in one piece.
func TestRetryFromManyClientsAtOnce(t *testing.T) {
	b := setup(t)
	r := followRevs(t, b.bus)
	tk := b.create(t, "true", task.Auto)
	b.waitStatus(t, tk.ID, task.Done)
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				_, err := b.runner.Retry(tk.ID)
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, task.ErrInvalidTransition):
					refused.Add(1)
				default:
					t.Errorf("retry: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	final := b.waitFor(t, tk.ID, "finished", func(tk task.Task) bool { return tk.Status.Finished() })
	if final.Status != task.Done {
		t.Fatalf("after the retries: %s %q", final.Status, final.Error)
	}
	if ok.Load() < 10 || refused.Load() == 0 {
		t.Fatalf("%d retries taken, %d refused: the hammer did not hammer", ok.Load(), refused.Load())
	}
	r.check()
}

// A task deleted the moment after it was queued (or tried again) is gone
// for good: its command never runs, and nothing writes it back.
func TestDeletedRightAfterQueueingNeverComesBack(t *testing.T) {
	b := setup(t)
	r := followRevs(t, b.bus)
	var deleted []string
	atOnce := map[string]bool{} // deleted before they started: their command must never run
	for i := range 150 {
		var id string
		if i%2 == 0 {
			id = b.create(t, "touch ran-$CONCH_TASK_ID", task.Auto).ID
		} else {
			id = b.create(t, "true", task.Auto).ID
			b.waitFor(t, id, "finished", func(tk task.Task) bool { return tk.Status.Finished() })
			if _, err := b.runner.Retry(id); err != nil {
				t.Fatal(err)
			}
		}
		err := b.runner.Delete(id)
		if err == nil {
			deleted = append(deleted, id)
			atOnce[id] = true
			continue
		}
		if !errors.Is(err, taskrun.ErrConflict) {
			t.Fatalf("delete: %v", err)
		}
		// It was already working: stop it, then delete it.
		b.waitFor(t, id, "finished", func(tk task.Task) bool { return tk.Status.Finished() })
		if err := b.runner.Delete(id); err != nil {
			t.Fatal(err)
		}
		deleted = append(deleted, id)
	}
	time.Sleep(300 * time.Millisecond) // let any run that escaped write
	for _, id := range deleted {
		if _, err := b.store.Task(id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleted task %s is in the store again: %v", id, err)
		}
		if _, err := b.runner.Get(id); !errors.Is(err, taskrun.ErrNotFound) {
			t.Fatalf("deleted task %s is listed again: %v", id, err)
		}
	}
	ran, _ := filepath.Glob(filepath.Join(b.dir, "ran-*"))
	for _, f := range ran {
		if id := strings.TrimPrefix(filepath.Base(f), "ran-"); atOnce[id] {
			t.Fatalf("the command of task %s ran after its delete was answered", id)
		}
	}
	if len(atOnce) == 0 {
		t.Fatal("no task was deleted before it started: the test proves nothing")
	}
	r.check()
	b.stop()
	b.start(t)
	for _, id := range deleted {
		if _, err := b.runner.Get(id); !errors.Is(err, taskrun.ErrNotFound) {
			t.Fatalf("deleted task %s is back after a restart: %v", id, err)
		}
	}
}

// Three questions waiting for the person do not hold the three background
// slots: a fourth task runs meanwhile, and the answered ones carry on at
// once.
func TestQuestionsDoNotHoldSlots(t *testing.T) {
	b := setup(t)
	var asking []task.Task
	for range 3 {
		asking = append(asking, b.create(t, "true", task.Ask))
	}
	for _, a := range asking {
		b.waitStatus(t, a.ID, task.NeedsYou)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c := b.runner.Concurrent(); c.Background.Running != 0; c = b.runner.Concurrent() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting questions count as running: %+v", c.Background)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fourth := b.create(t, "echo fourth", task.Auto)
	b.waitStatus(t, fourth.ID, task.Done)
	// Three long tasks fill the slots; an answer still carries on at once.
	var long []task.Task
	for range 3 {
		long = append(long, b.create(t, "sleep 30", task.Auto))
	}
	for _, l := range long {
		b.waitStatus(t, l.ID, task.Running)
	}
	for _, a := range asking {
		cur, _ := b.runner.Get(a.ID)
		if _, err := b.runner.Answer(a.ID, cur.Ask.ID, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range asking {
		b.waitStatus(t, a.ID, task.Done)
	}
	waiting := b.create(t, "echo later", task.Auto)
	time.Sleep(100 * time.Millisecond)
	if got, _ := b.runner.Get(waiting.ID); got.Status != task.Queued {
		t.Fatalf("a fifth task started while three held the slots: %s", got.Status)
	}
	if _, err := b.runner.StopTask(long[0].ID); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, waiting.ID, task.Done)
	for _, l := range long[1:] {
		if _, err := b.runner.StopTask(l.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// panicky is an executor with a bug.
type panicky struct{}

func (panicky) Ready() (bool, string) { return true, "" }
func (panicky) Execute(context.Context, *taskrun.Run) (taskrun.Outcome, error) {
	var m map[string]int
	//lint:ignore SA5000 the nil map write is the bug under test
	m["boom"]++ // a nil map write: the kind of bug a provider could have
	return taskrun.Outcome{}, nil
}

func TestAPanicFailsItsTaskAndConchCarriesOn(t *testing.T) {
	b := setup(t, func(c *taskrun.Config) { c.Executors["buggy"] = panicky{} })
	bad, err := b.runner.Create(taskrun.CreateRequest{Text: "anything", Options: taskrun.Options{Provider: "buggy", Mode: "auto", Cwd: b.dir}})
	if err != nil {
		t.Fatal(err)
	}
	f := b.waitStatus(t, bad.ID, task.Failed)
	if !strings.HasPrefix(f.Error, "Conch hit an internal error while running this task") {
		t.Fatalf("error %q", f.Error)
	}
	good := b.create(t, "echo still here", task.Auto)
	if d := b.waitStatus(t, good.ID, task.Done); d.Summary != "still here" {
		t.Fatalf("after the panic: %+v", d)
	}
	// A run frees its slot just after its task's last change is out.
	deadline := time.Now().Add(5 * time.Second)
	for c := b.runner.Concurrent(); c.Background.Running != 0; c = b.runner.Concurrent() {
		if time.Now().After(deadline) {
			t.Fatalf("the panicked run kept its slot: %+v", c.Background)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// After a crash the log, not the last flush, says how much a task printed.
func TestHealingTakesOutputBytesFromTheLog(t *testing.T) {
	b := setup(t)
	b.stop()
	st, err := store.Open(b.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	id := "2b6f1a52-3c7e-4c39-9f57-7f0d3c1b9a12"
	if err := st.PutTask(task.Task{ID: id, Kind: task.Background, Status: task.Running, Title: "t", Text: "yes",
		Provider: "shell", Mode: task.Auto, Cwd: b.dir, OutputBytes: 3, CreatedAt: now, StartedAt: &now, Rev: 9}); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	w, err := b.logs.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(strings.Repeat("y\n", 50))); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	b.start(t)
	got, _ := b.runner.Get(id)
	if got.Status != task.Interrupted || got.OutputBytes != 100 {
		t.Fatalf("healed: %s, outputBytes %d (the log holds 100)", got.Status, got.OutputBytes)
	}
}

// Many clients retrying, stopping, deleting and answering the same tasks at
// once, while the tasks change underneath: no panic, every operation takes
// effect whole or is refused, deleted tasks are gone (store, runner and
// processes), the rest end in a legal status, and revs only go up.
func TestManyClientsOnTheSameTasks(t *testing.T) {
	b := setup(t, func(c *taskrun.Config) { c.AskTimeout = 2 * time.Second })
	r := followRevs(t, b.bus)
	texts := []struct {
		text string
		mode task.Mode
	}{
		{"true", task.Auto},
		{"sleep 0.05", task.Auto},
		{"sleep 30", task.Auto},
		{"echo asked", task.Ask},
		{"sleep 0.2; exit 2", task.Auto},
	}
	var mu sync.Mutex
	var ids []string
	deleted := map[string]bool{}
	for i := range 12 {
		x := texts[i%len(texts)]
		ids = append(ids, b.create(t, x.text, x.mode).ID)
	}
	pick := func(rng *rand.Rand) string {
		mu.Lock()
		defer mu.Unlock()
		return ids[rng.IntN(len(ids))]
	}
	var ops atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for time.Now().Before(deadline) {
				id := pick(rng)
				var err error
				switch rng.IntN(10) {
				case 0, 1, 2:
					_, err = b.runner.Retry(id)
				case 3, 4:
					_, err = b.runner.StopTask(id)
				case 5:
					err = b.runner.Delete(id)
					if err == nil {
						mu.Lock()
						deleted[id] = true
						// Keep the pool full: a new task takes its place.
						x := texts[rng.IntN(len(texts))]
						nt, cerr := b.runner.Create(taskrun.CreateRequest{Text: x.text, Options: taskrun.Options{Mode: string(x.mode), Cwd: b.dir}})
						if cerr == nil {
							for i := range ids {
								if ids[i] == id {
									ids[i] = nt.ID
								}
							}
						}
						mu.Unlock()
					}
				case 6, 7:
					cur, gerr := b.runner.Get(id)
					if gerr == nil && cur.Ask != nil {
						_, err = b.runner.Answer(id, cur.Ask.ID, rng.IntN(2) == 0)
					}
				default:
					_, err = b.runner.Get(id)
				}
				ops.Add(1)
				if err != nil && !errors.Is(err, taskrun.ErrNotFound) && !errors.Is(err, taskrun.ErrConflict) && !errors.Is(err, task.ErrInvalidTransition) {
					t.Errorf("an operation failed with neither a refusal nor not-found: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if ops.Load() < 500 {
		t.Fatalf("only %d operations ran", ops.Load())
	}
	// Stop what still runs, then everything must have ended in a legal status.
	tasks, _ := b.runner.Active()
	for _, tk := range tasks {
		if !tk.Status.Finished() {
			_, _ = b.runner.StopTask(tk.ID)
		}
	}
	tasks, _ = b.store.Tasks()
	for _, tk := range tasks {
		got := b.waitFor(t, tk.ID, "finished", func(tk task.Task) bool { return tk.Status.Finished() })
		if !got.Status.Valid() {
			t.Fatalf("task %s has status %q", got.ID, got.Status)
		}
		stored, err := b.store.Task(tk.ID)
		if err != nil || stored.Rev != got.Rev || stored.Status != got.Status {
			t.Fatalf("store and runner disagree on %s: %+v vs %s rev %d (%v)", tk.ID, stored, got.Status, got.Rev, err)
		}
	}
	mu.Lock()
	gone := make([]string, 0, len(deleted))
	for id := range deleted {
		gone = append(gone, id)
	}
	mu.Unlock()
	if len(gone) == 0 {
		t.Fatal("no delete went through")
	}
	time.Sleep(200 * time.Millisecond)
	for _, id := range gone {
		if _, err := b.store.Task(id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleted task %s is in the store: %v", id, err)
		}
		if _, err := b.runner.Get(id); !errors.Is(err, taskrun.ErrNotFound) {
			t.Fatalf("deleted task %s is listed: %v", id, err)
		}
		if pids := procmark.Find(procmark.Mark{Home: b.mark, Task: id}); len(pids) > 0 {
			t.Fatalf("deleted task %s still has processes %v", id, pids)
		}
	}
	if _, err := os.Stat(b.dbPath); err != nil {
		t.Fatal(err)
	}
	r.check()
}

// A slot passing from one task to the next while clients stop, delete and
// try again the tasks waiting for it: no more tasks ever work at once than
// the limit, each operation lands whole or is refused, every task ends,
// and the slot is free at the end.
func TestTheSlotPassesWhileClientsChangeTheQueue(t *testing.T) {
	b := setup(t)
	b.runner.SetLimits(pref.Limits{Background: 1, Helper: 1})
	sub := b.bus.Subscribe(1 << 16)
	defer sub.Close()
	var ids []string
	for i := range 40 {
		ids = append(ids, b.create(t, fmt.Sprintf("echo %d", i), task.Auto).ID)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 60 {
				id := ids[rng.IntN(len(ids))]
				var err error
				switch rng.IntN(3) {
				case 0:
					_, err = b.runner.StopTask(id)
				case 1:
					err = b.runner.Delete(id)
				default:
					_, err = b.runner.Retry(id)
				}
				if err != nil && !errors.Is(err, taskrun.ErrNotFound) && !errors.Is(err, taskrun.ErrConflict) && !errors.Is(err, task.ErrInvalidTransition) {
					t.Errorf("an operation failed with neither a refusal nor not-found: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if _, err := b.runner.Get(id); err == nil {
			b.waitFor(t, id, "finished", func(tk task.Task) bool { return tk.Status.Finished() })
		}
	}
	// The events, in the order they were stored, never show two at work.
	working := map[string]bool{}
	most := 0
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		switch {
		case ev.Type == event.TaskDeleted:
			delete(working, ev.ID)
		case ev.Type == event.TaskChanged && ev.Task.Status == task.Running:
			working[ev.Task.ID] = true
		case ev.Type == event.TaskChanged:
			delete(working, ev.Task.ID)
		}
		most = max(most, len(working))
	}
	if most != 1 {
		t.Fatalf("at most %d tasks worked at once with a limit of 1", most)
	}
	if c := b.runner.Concurrent(); c.Background.Running != 0 {
		t.Fatalf("the slot is still counted at the end: %+v", c)
	}
	// And a task sent now still gets the slot.
	last := b.create(t, "echo after", task.Auto)
	b.waitStatus(t, last.ID, task.Done)
}
