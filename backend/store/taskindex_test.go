package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"conch/backend/task"
)

var minute0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// mk is a task of status s, created at minute i, ended at minute i+1 when
// finished.
func mk(id string, s task.Status, i int) task.Task {
	t := task.Task{ID: id, Kind: task.Background, Status: s, Title: "Task " + id, Text: id, Mode: task.Auto,
		Cwd: "/tmp", Steps: []string{}, Wake: task.WakeNone, CreatedAt: minute0.Add(time.Duration(i) * time.Minute)}
	if GroupOf(s) == GroupFinished {
		end := t.CreatedAt.Add(time.Minute)
		t.EndedAt = &end
	}
	return t
}

func ids(ts []task.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func mustPut(t *testing.T, s *Bolt, tasks ...task.Task) {
	t.Helper()
	for _, tk := range tasks {
		if err := s.PutTask(tk); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCountsFollowEveryChange(t *testing.T) {
	s, _ := openTest(t)
	mustPut(t, s, mk("a", task.Queued, 0), mk("b", task.Running, 1), mk("c", task.Done, 2), mk("d", task.Done, 3))
	want := map[task.Status]int{task.Queued: 1, task.Running: 1, task.Done: 2}
	if got, err := s.TaskCounts(); err != nil || !mapsEqual(got, want) {
		t.Fatalf("counts %v %v, want %v", got, err, want)
	}
	// a starts, b fails, d goes.
	mustPut(t, s, mk("a", task.Running, 0), mk("b", task.Failed, 1))
	if err := s.DeleteTask("d"); err != nil {
		t.Fatal(err)
	}
	want = map[task.Status]int{task.Running: 1, task.Failed: 1, task.Done: 1}
	if got, _ := s.TaskCounts(); !mapsEqual(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	p, _ := s.TasksInGroup(GroupFinished, TaskFilter{}, "", 10)
	if !slices.Equal(ids(p.Tasks), []string{"c", "b"}) {
		t.Errorf("finished %q, want the newest ended first", ids(p.Tasks))
	}
	active, _ := s.ActiveTasks()
	if !slices.Equal(ids(active), []string{"a"}) {
		t.Errorf("active %q", ids(active))
	}
}

func mapsEqual(a, b map[task.Status]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Pages chain through the group: every task once, in order, and a cursor
// is refused anywhere it was not given.
func TestPagesChainThroughAGroup(t *testing.T) {
	s, _ := openTest(t)
	var want []string
	for i := 0; i < 250; i++ {
		id := fmt.Sprintf("f%03d", i)
		mustPut(t, s, mk(id, []task.Status{task.Done, task.Failed, task.Stopped, task.Interrupted}[i%4], i))
		want = append([]string{id}, want...) // newest first
	}
	mustPut(t, s, mk("q1", task.Queued, 300))
	var got []string
	cursor, pages := "", 0
	for {
		p, err := s.TasksInGroup(GroupFinished, TaskFilter{}, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(p.Tasks)...)
		pages++
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Fatalf("%d pages; got %d tasks, first %q", pages, len(got), got[:min(3, len(got))])
	}
	first, _ := s.TasksInGroup(GroupFinished, TaskFilter{}, "", 100)
	for _, bad := range []string{"nonsense!", "AAAA", first.Next[:len(first.Next)-2]} {
		if _, err := s.TasksInGroup(GroupFinished, TaskFilter{}, bad, 10); err != ErrBadCursor && bad != first.Next[:len(first.Next)-2] {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
	if _, err := s.TasksInGroup(GroupWaiting, TaskFilter{}, first.Next, 10); err != ErrBadCursor {
		t.Errorf("a finished cursor for the waiting group: %v", err)
	}
	if _, err := s.TasksInGroup("everything", TaskFilter{}, "", 10); err == nil {
		t.Error("an unknown group was answered")
	}
}

func TestFiltersAndTheirPages(t *testing.T) {
	s, _ := openTest(t)
	for i := 0; i < 30; i++ {
		tk := mk(fmt.Sprintf("t%02d", i), []task.Status{task.Done, task.Failed}[i%2], i)
		if i%3 == 0 {
			tk.Title = "Fix the Flaky test " + tk.ID
		}
		mustPut(t, s, tk)
	}
	p, _ := s.TasksInGroup(GroupFinished, TaskFilter{Statuses: []task.Status{task.Failed}, Query: "flaky FIX"}, "", 2)
	if !slices.Equal(ids(p.Tasks), []string{"t27", "t21"}) || p.Next == "" {
		t.Fatalf("page %q next %q", ids(p.Tasks), p.Next)
	}
	p, _ = s.TasksInGroup(GroupFinished, TaskFilter{Statuses: []task.Status{task.Failed}, Query: "flaky fix"}, p.Next, 10)
	if !slices.Equal(ids(p.Tasks), []string{"t15", "t09", "t03"}) || p.Next != "" {
		t.Fatalf("next page %q next %q", ids(p.Tasks), p.Next)
	}
}

func TestTasksOfAChatAndTheOldestFinished(t *testing.T) {
	s, _ := openTest(t)
	for i := 0; i < 5; i++ {
		tk := mk(fmt.Sprintf("c%d", i), task.Done, i)
		tk.ParentConversationID = "chat-1"
		mustPut(t, s, tk)
	}
	other := mk("x", task.Done, 9)
	other.ParentConversationID = "chat-2"
	mustPut(t, s, other)
	p, _ := s.TasksOf("chat-1", "", 3)
	if !slices.Equal(ids(p.Tasks), []string{"c4", "c3", "c2"}) || p.Next == "" {
		t.Fatalf("tasks of chat-1 %q", ids(p.Tasks))
	}
	p, _ = s.TasksOf("chat-1", p.Next, 3)
	if !slices.Equal(ids(p.Tasks), []string{"c1", "c0"}) || p.Next != "" {
		t.Fatalf("the rest %q", ids(p.Tasks))
	}
	// c0 ended at minute 1, c1 at 2, …: before minute 3 are c0 and c1.
	old, err := s.FinishedBefore(minute0.Add(3*time.Minute), 10)
	if err != nil || !slices.Equal(ids(old), []string{"c0", "c1"}) {
		t.Fatalf("finished before: %q %v", ids(old), err)
	}
	if old, _ := s.FinishedBefore(minute0.Add(time.Hour), 2); len(old) != 2 {
		t.Errorf("the limit: %d", len(old))
	}
}

func TestUnsettledWorktrees(t *testing.T) {
	s, _ := openTest(t)
	h := mk("h", task.Running, 0)
	h.Worktree = &task.Worktree{Path: "/w/h", Branch: "conch/h"}
	kept := mk("k", task.Done, 1)
	kept.Worktree = &task.Worktree{Path: "/w/k", Branch: "conch/k", Kept: true}
	mustPut(t, s, h, kept, mk("plain", task.Done, 2))
	if u, _ := s.UnsettledWorktrees(); !slices.Equal(ids(u), []string{"h"}) {
		t.Fatalf("unsettled %q", ids(u))
	}
	h.Worktree.Kept = true
	mustPut(t, s, h)
	if u, _ := s.UnsettledWorktrees(); len(u) != 0 {
		t.Fatalf("after settling %q", ids(u))
	}
}

// dumpIndex is the index bucket and the counts, as they stand.
func dumpIndex(t *testing.T, s *Bolt) (map[string]string, map[task.Status]int) {
	t.Helper()
	idx := map[string]string{}
	var counts map[task.Status]int
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		if counts, err = taskCounts(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketTaskIndex).ForEach(func(k, v []byte) error {
			idx[string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx, counts
}

// Whatever happens to the tasks, the index is what building it from the
// records would give, and so is an index built for a database from before
// it (a version 1 file, opened by this Conch).
func TestTheIndexIsAlwaysWhatARebuildGives(t *testing.T) {
	s, path := openTest(t)
	r := rand.New(rand.NewPCG(1, 2))
	statuses := []task.Status{task.Queued, task.Running, task.NeedsYou, task.Done, task.Failed, task.Stopped, task.Interrupted}
	live := map[string]bool{}
	last := map[string]task.Task{}
	for i := 0; i < 900; i++ {
		id := fmt.Sprintf("t%02d", r.IntN(80))
		if live[id] && r.IntN(5) == 0 {
			if err := s.DeleteTask(id); err != nil {
				t.Fatal(err)
			}
			delete(live, id)
			continue
		}
		if live[id] && r.IntN(3) == 0 {
			// A change the index does not see (a step), or one that only
			// changes an entry's value (the title).
			tk := last[id]
			if r.IntN(2) == 0 {
				tk.Steps = append(slices.Clone(tk.Steps), fmt.Sprintf("step %d", i))
			} else {
				tk.Title = fmt.Sprintf("Retitled %d", r.IntN(9))
			}
			mustPut(t, s, tk)
			last[id] = tk
			continue
		}
		tk := mk(id, statuses[r.IntN(len(statuses))], r.IntN(1000))
		if r.IntN(3) == 0 {
			tk.ParentConversationID = fmt.Sprintf("chat-%d", r.IntN(4))
		}
		if r.IntN(4) == 0 {
			tk.Worktree = &task.Worktree{Path: "/w/" + id, Kept: r.IntN(2) == 0}
		}
		tk.Title = fmt.Sprintf("Title %d of %s", r.IntN(9), id)
		mustPut(t, s, tk)
		live[id] = true
		last[id] = tk
	}
	kept, keptCounts := dumpIndex(t, s)
	if n := len(live); total(keptCounts) != n {
		t.Fatalf("counts add up to %d, %d tasks", total(keptCounts), n)
	}
	// Make it a version 1 database: no index, no mark that one was built.
	s2 := reopenChanged(t, s, path, func(db *bolt.DB) {
		if err := db.Update(func(tx *bolt.Tx) error {
			if err := tx.DeleteBucket(bucketTaskIndex); err != nil {
				return err
			}
			meta := tx.Bucket(bucketMeta)
			_ = meta.Delete(keyTaskIndexed)
			_ = meta.Delete(keyTaskCounts)
			return meta.Put(keySchema, []byte("1"))
		}); err != nil {
			t.Fatal(err)
		}
	})
	rebuilt, rebuiltCounts := dumpIndex(t, s2)
	if !mapsEqual(keptCounts, rebuiltCounts) {
		t.Errorf("counts kept %v, rebuilt %v", keptCounts, rebuiltCounts)
	}
	if len(kept) != len(rebuilt) {
		t.Fatalf("%d index entries kept, %d rebuilt", len(kept), len(rebuilt))
	}
	for k, v := range kept {
		if rv, ok := rebuilt[k]; !ok || rv != v {
			t.Fatalf("entry %q: kept %q, rebuilt %q (present %v)", k, v, rv, ok)
		}
	}
}

func total(m map[task.Status]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// reopenChanged closes s, lets change work on the raw file, and opens it
// again.
func reopenChanged(t *testing.T, s *Bolt, path string, change func(db *bolt.DB)) *Bolt {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	change(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	return s2
}

// FuzzTaskCursor: any cursor gives a page or ErrBadCursor, never a panic
// or a task from outside the group.
func FuzzTaskCursor(f *testing.F) {
	s, _ := openTest(f)
	for i := 0; i < 5; i++ {
		if err := s.PutTask(mk(fmt.Sprintf("f%d", i), task.Done, i)); err != nil {
			f.Fatal(err)
		}
	}
	if err := s.PutTask(mk("w", task.Queued, 9)); err != nil {
		f.Fatal(err)
	}
	first, _ := s.TasksInGroup(GroupFinished, TaskFilter{}, "", 2)
	f.Add(first.Next)
	f.Add("")
	f.Add("Z2ZpbmlzaGVkAA")
	f.Fuzz(func(t *testing.T, cursor string) {
		p, err := s.TasksInGroup(GroupFinished, TaskFilter{}, cursor, 3)
		if err != nil {
			if err != ErrBadCursor {
				t.Fatalf("cursor %q: %v", cursor, err)
			}
			return
		}
		for _, tk := range p.Tasks {
			if GroupOf(tk.Status) != GroupFinished {
				t.Fatalf("cursor %q gave %s task %s", cursor, tk.Status, tk.ID)
			}
		}
	})
}

// Many tasks put at once are indexed and counted as one at a time would be.
func TestPutTasksIndexesEveryOne(t *testing.T) {
	s, _ := openTest(t)
	var ts []task.Task
	for i := range 300 {
		tk := newTask(fmt.Sprintf("bulk-%03d", i), epoch.Add(time.Duration(i)*time.Second))
		if i%2 == 0 {
			end := tk.CreatedAt.Add(time.Second)
			tk.Status, tk.EndedAt = task.Done, &end
		}
		ts = append(ts, tk)
	}
	if err := s.PutTasks(ts); err != nil {
		t.Fatal(err)
	}
	c, err := s.TaskCounts()
	if err != nil || c[task.Done] != 150 || c[task.Queued] != 150 {
		t.Fatalf("counts %v %v", c, err)
	}
	p, err := s.TasksInGroup(GroupFinished, TaskFilter{}, "", 500)
	if err != nil || len(p.Tasks) != 150 || p.Tasks[0].ID != "bulk-298" {
		t.Fatalf("finished page: %d tasks, %v", len(p.Tasks), err)
	}
	if err := s.PutTasks([]task.Task{newTask("ok", epoch), {}}); err == nil {
		t.Fatal("a task without an id was taken")
	}
	if _, err := s.Task("ok"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused batch left %v", err)
	}
}

// indexState is the task index bucket's root page and the counts as stored:
// a commit that changed anything in the index gives its root a new page.
func indexState(t *testing.T, s *Bolt) (uint64, string) {
	t.Helper()
	var root uint64
	var counts string
	if err := s.view(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket(bucketTaskIndex).Root())
		counts = string(tx.Bucket(bucketMeta).Get(keyTaskCounts))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return root, counts
}

// A change that moves a task nowhere in the index (a step) writes none of
// the index's pages and leaves the counts alone; one that does is written.
func TestAChangeTheIndexDoesNotSeeRewritesNoneOfIt(t *testing.T) {
	s, _ := openTest(t)
	// Enough tasks that the index is a tree of its own pages, not inline.
	for i := range 300 {
		mustPut(t, s, mk(fmt.Sprintf("d%03d", i), task.Done, i))
	}
	tk := mk("run", task.Running, 400)
	tk.ParentConversationID = "chat"
	mustPut(t, s, tk)
	root, counts := indexState(t, s)

	tk.Steps = append(tk.Steps, "ran the tests")
	mustPut(t, s, tk)
	if r, c := indexState(t, s); r != root || c != counts {
		t.Fatalf("a step rewrote the index (root page %d → %d) or the counts (%s → %s)", root, r, counts, c)
	}
	if got, _ := s.Task("run"); len(got.Steps) != 1 {
		t.Fatalf("the step was not stored: %+v", got.Steps)
	}

	tk.Title = "Run the tests again"
	mustPut(t, s, tk)
	r, c := indexState(t, s)
	if r == root || c != counts {
		t.Fatalf("a new title: root page %d → %d (want a new one), counts %s → %s (want the same)", root, r, counts, c)
	}
	p, err := s.TasksInGroup(GroupWorking, TaskFilter{Query: "again"}, "", 10)
	if err != nil || len(p.Tasks) != 1 {
		t.Fatalf("a search by the new title found %v (%v)", ids(p.Tasks), err)
	}

	tk.Status = task.Done
	end := tk.CreatedAt.Add(time.Hour)
	tk.EndedAt = &end
	mustPut(t, s, tk)
	if _, c2 := indexState(t, s); c2 == c {
		t.Fatalf("the counts stayed %s when the task ended", c2)
	}
	if n, _ := s.TaskCounts(); n[task.Done] != 301 || n[task.Running] != 0 {
		t.Fatalf("counts %v, want 301 done and none running", n)
	}
}
