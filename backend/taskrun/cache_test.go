package taskrun_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// seedDone stores n finished shell tasks directly, as a Conch that ran
// them would have left them, and returns their ids.
func seedDone(t *testing.T, dbPath string, n int) []string {
	t.Helper()
	st, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := make([]string, n)
	ts := make([]task.Task, n)
	ended := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for i := range n {
		ids[i] = fmt.Sprintf("done-%05d", i)
		end := ended.Add(time.Duration(i) * time.Millisecond)
		ts[i] = task.Task{ID: ids[i], Kind: task.Background, Status: task.Done, Title: "true", Text: "true",
			Provider: "shell", Mode: task.Auto, Steps: []string{}, CreatedAt: ended, EndedAt: &end, Rev: 3, Wake: task.WakeNone}
	}
	if err := st.PutTasks(ts); err != nil {
		t.Fatal(err)
	}
	return ids
}

// Memory does not grow with the finished tasks kept: start-up reads none of
// them, and using them (read, marked, tried again) keeps a bounded cache.
func TestFinishedTasksAreNotHeldInMemory(t *testing.T) {
	b := &bundle{dir: t.TempDir(), home: t.TempDir()}
	b.dbPath = b.home + "/conch.db"
	ids := seedDone(t, b.dbPath, 4*taskrun.CacheSize)
	b.start(t)
	if n := b.runner.Held(); n != 0 {
		t.Fatalf("start-up holds %d tasks, none of them unfinished", n)
	}
	for _, id := range ids {
		if _, err := b.runner.Get(id); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.runner.MarkNotified(id); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.runner.Held(); n > 2*taskrun.CacheSize {
		t.Fatalf("after using %d finished tasks the runner holds %d", len(ids), n)
	}
	// Tried again, a task runs (held while it does), and is let go after.
	for _, id := range ids[:20] {
		if _, err := b.runner.Retry(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[:20] {
		b.waitStatus(t, id, task.Done)
	}
	if n := b.runner.Held(); n > 2*taskrun.CacheSize {
		t.Fatalf("after the retries the runner holds %d", n)
	}
	for _, id := range ids[:20] {
		// Marked (4), queued (5), running (6), done (7).
		if tk, _ := b.runner.Get(id); tk.Status != task.Done || tk.Rev < 7 {
			t.Fatalf("%s: %+v", id, tk)
		}
	}
}

// A task read back into the cache while others are dropped from it is
// still one record: changes from many goroutines at once all land, each
// on the one before (rev counts every one of them).
func TestChangesThroughTheCacheAllLand(t *testing.T) {
	b := &bundle{dir: t.TempDir(), home: t.TempDir()}
	b.dbPath = b.home + "/conch.db"
	ids := seedDone(t, b.dbPath, 3*taskrun.CacheSize)
	b.start(t)
	const writers, each = 8, 40
	hot := ids[:4]
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				// Churn the cache with other tasks between the changes.
				cold := ids[len(hot)+(w*each+i)*7%(len(ids)-len(hot))]
				if _, err := b.runner.Amend(cold, func(t *task.Task) { t.AddStep("looked at") }); err != nil {
					t.Error(err)
				}
				if _, err := b.runner.Amend(hot[i%len(hot)], func(t *task.Task) { t.AddStep(fmt.Sprintf("w%d-%d", w, i)) }); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, id := range hot {
		tk, err := b.runner.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(3 + writers*each/len(hot))
		if tk.Rev != want {
			t.Errorf("%s: rev %d, want %d: a change was made on a copy that was not the task's only one", id, tk.Rev, want)
		}
		stored, err := b.store.Task(id)
		if err != nil || stored.Rev != tk.Rev {
			t.Errorf("%s: stored rev %d (%v), live %d", id, stored.Rev, err, tk.Rev)
		}
	}
	if n := b.runner.Held(); n > 2*taskrun.CacheSize {
		t.Fatalf("the runner holds %d", n)
	}
}
