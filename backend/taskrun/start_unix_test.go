//go:build unix

package taskrun_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"conch/backend/pref"
	"conch/backend/procmark"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// heldStore holds the write that stores one task's end with the next
// one's start (PutTasks) until let, and can fail the writes of a task.
type heldStore struct {
	store.Store
	held chan struct{} // closed to let the held writes go
	mu   sync.Mutex
	fail map[string]bool // writes of these tasks fail
	puts int             // PutTasks calls seen
}

var errDiskFull = errors.New("no space left on device")

func (s *heldStore) PutTasks(ts []task.Task) error {
	s.mu.Lock()
	s.puts++
	s.mu.Unlock()
	<-s.held
	if s.failing(ts...) {
		return errDiskFull
	}
	return s.Store.PutTasks(ts)
}

func (s *heldStore) PutTask(t task.Task) error {
	if s.failing(t) {
		return errDiskFull
	}
	return s.Store.PutTask(t)
}

func (s *heldStore) failing(ts ...task.Task) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(ts, func(t task.Task) bool { return s.fail[t.ID] })
}

func (s *heldStore) waitPuts(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		puts := s.puts
		s.mu.Unlock()
		if puts >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("saw %d writes of a task's end with the next one's start; want %d", puts, n)
		}
	}
}

// setupHeld is a runner with one background slot over a heldStore.
func setupHeld(t *testing.T) (*bundle, *heldStore) {
	hs := &heldStore{held: make(chan struct{}), fail: map[string]bool{}}
	b := setup(t, func(c *taskrun.Config) { hs.Store = c.Store; c.Store = hs })
	t.Cleanup(func() {
		select {
		case <-hs.held:
		default:
			close(hs.held)
		}
	})
	b.runner.SetLimits(pref.Limits{Background: 1, Helper: 1})
	return b, hs
}

// queueTwo sends a command that ends when told, and after it one that
// marks that it ran; it returns both and the mark's path.
func queueTwo(t *testing.T, b *bundle) (first, second task.Task, ran string) {
	release := filepath.Join(b.dir, "release")
	ran = filepath.Join(b.dir, "ran")
	first = b.create(t, "while [ ! -e release ]; do sleep 0.01; done", task.Auto)
	b.waitStatus(t, first.ID, task.Running)
	second = b.create(t, "touch ran", task.Auto)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return first, second, ran
}

// A task that takes the slot straight from the one before starts its
// process while the write that ends the one before and starts it is in
// flight, but its command runs only once that write has landed.
func TestTheNextCommandStartsAsTheSlotPassesAndRunsOnceStored(t *testing.T) {
	b, hs := setupHeld(t)
	first, second, ran := queueTwo(t, b)
	hs.waitPuts(t, 1)
	mark := procmark.Mark{Home: b.mark, Task: second.ID}
	for deadline := time.Now().Add(10 * time.Second); len(procmark.Find(mark)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the next task's process did not start while its start was being stored")
		}
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Fatalf("the next command ran before its start was stored (%v)", err)
	}
	if stored, _ := hs.Task(second.ID); stored.Status != task.Queued {
		t.Fatalf("the next task is stored %s while its start is held", stored.Status)
	}
	close(hs.held)
	b.waitStatus(t, first.ID, task.Done)
	b.waitStatus(t, second.ID, task.Done)
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the next command did not run once its start was stored: %v", err)
	}
}

// When the write fails whole, the next task's start is written alone, as
// it is when nothing is passed to it, and it runs.
func TestTheNextTaskStartsAloneWhenTheSharedWriteFails(t *testing.T) {
	b, hs := setupHeld(t)
	first, second, ran := queueTwo(t, b)
	hs.waitPuts(t, 1)
	hs.mu.Lock()
	hs.fail[first.ID] = true
	hs.mu.Unlock()
	close(hs.held)
	b.waitStatus(t, second.ID, task.Done)
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the next command did not run: %v", err)
	}
}

// A task whose start is never stored runs nothing: its process, started
// early, ends at its gate, and its record stays queued.
func TestATaskWhoseStartIsNeverStoredRunsNothing(t *testing.T) {
	b, hs := setupHeld(t)
	_, second, ran := queueTwo(t, b)
	hs.waitPuts(t, 1)
	hs.mu.Lock()
	hs.fail[second.ID] = true
	hs.mu.Unlock()
	close(hs.held)
	mark := procmark.Mark{Home: b.mark, Task: second.ID}
	for deadline := time.Now().Add(10 * time.Second); len(procmark.Find(mark)) > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process of a task whose start was never stored is still there")
		}
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Fatalf("a command whose start was never stored ran (%v)", err)
	}
	if stored, err := hs.Task(second.ID); err != nil || stored.Status != task.Queued {
		t.Fatalf("the task is stored %s (%v); want it left queued", stored.Status, err)
	}
	if got, _ := b.runner.Get(second.ID); got.Status != task.Queued {
		t.Fatalf("the runner says %s; want queued, as stored", got.Status)
	}
}
