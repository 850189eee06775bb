package search_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/search"
	"conch/backend/store"
	"conch/backend/task"
)

type rig struct {
	dir  string
	st   *store.Bolt
	bus  *event.Bus
	logs *output.Logs
	idx  *search.Index
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dir: dir, st: st, bus: event.NewBus(), logs: output.New(filepath.Join(dir, "tasks"))}
	t.Cleanup(func() {
		if r.idx != nil {
			r.idx.Stop()
		}
		r.bus.Close()
		_ = st.Close()
	})
	return r
}

// start opens the index (a fresh one rebuilds from the store).
func (r *rig) start(t *testing.T, identity string) {
	t.Helper()
	if r.idx != nil {
		r.idx.Stop()
	}
	r.idx = search.New(search.Config{Dir: filepath.Join(r.dir, "search"), Store: r.st, Logs: r.logs, Bus: r.bus, Identity: identity})
	if err := r.idx.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rebuild to end", func() bool { return r.idx.Rebuilding() == nil })
}

// task stores a finished task that printed out, and tells the bus, as the
// runner does.
func (r *rig) task(t *testing.T, title, text, out string) task.Task {
	t.Helper()
	now := time.Now().UTC()
	tk := task.Task{ID: store.NewID(), Kind: task.Background, Status: task.Done, Title: title, Text: text,
		Mode: task.Auto, Cwd: "/", Provider: "shell", Summary: "finished " + title, CreatedAt: now, EndedAt: &now}
	if out != "" {
		w, err := r.logs.Open(tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(out)); err != nil {
			t.Fatal(err)
		}
		_ = w.Close()
	}
	if err := r.st.PutTask(tk); err != nil {
		t.Fatal(err)
	}
	c := tk.Clone()
	r.bus.Publish(event.Event{Type: event.TaskChanged, Task: &c, Prev: task.Running})
	return tk
}

// chat stores a chat with one message from the person, as the chats do.
func (r *rig) chat(t *testing.T, title, said string) conversation.Conversation {
	t.Helper()
	now := time.Now().UTC()
	c := conversation.Conversation{ID: store.NewID(), Title: title, Origin: conversation.Origin{Kind: conversation.FromChat},
		Mode: task.Ask, Cwd: "/", CreatedAt: now, UpdatedAt: now, Rev: 1, LastSeq: 1}
	m := conversation.Message{ID: store.NewID(), ConversationID: c.ID, Seq: 1, Kind: conversation.User, Text: said, CreatedAt: now}
	if err := r.st.PutConversation(c, m); err != nil {
		t.Fatal(err)
	}
	cc := c
	r.bus.Publish(event.Event{Type: event.ConversationChanged, Conversation: &cc})
	r.bus.Publish(event.Event{Type: event.MessageAdded, Message: &m})
	return c
}

func (r *rig) find(t *testing.T, q search.Query) search.Results {
	t.Helper()
	res, err := r.idx.Search(q)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// found waits until q finds something, and returns it.
func (r *rig) found(t *testing.T, q search.Query) search.Results {
	t.Helper()
	var res search.Results
	eventually(t, "a hit for "+q.Q, func() bool { res = r.find(t, q); return len(res.Hits) > 0 })
	return res
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func marked(h search.Hit) []string {
	var out []string
	for _, p := range h.Snippet {
		if p.Mark {
			out = append(out, p.Text)
		}
	}
	return out
}

func TestAWordOnlyInATasksOutputIsFound(t *testing.T) {
	r := newRig(t)
	r.start(t, "one")
	r.task(t, "Run the unit tests", "go test ./...", "ok  pkg/a\nFAIL pkg/b: xylophone mismatch\n")
	r.task(t, "Build it", "make", "all good\n")
	res := r.found(t, search.Query{Q: "xylophone"})
	if len(res.Hits) != 1 || res.Hits[0].Kind != search.KindOutput || res.Hits[0].Title != "Run the unit tests" {
		t.Fatalf("hits %+v; want the one task's output", res.Hits)
	}
	if m := marked(res.Hits[0]); len(m) != 1 || m[0] != "xylophone" {
		t.Fatalf("snippet marks %q; want the word", m)
	}
}

// Most changes to a task leave what is searched of it as it was (its
// output growing, its notification noted): those write nothing to the
// index, even a batch apart; a change to what is searched (its status) is
// written.
func TestAChangeThatLeavesATaskAsItWasWritesNothing(t *testing.T) {
	r := newRig(t)
	r.start(t, "")
	tk := r.task(t, "Build the docs", "make docs", "")
	r.found(t, search.Query{Q: "docs"})
	eventually(t, "the task's write", func() bool { return r.idx.Updates() == 1 })
	for i := range 4 {
		c := tk.Clone()
		c.OutputBytes = int64(100 * (i + 1))
		c.Notified = i >= 2
		r.bus.Publish(event.Event{Type: event.TaskChanged, Task: &c, Prev: task.Done})
		time.Sleep(150 * time.Millisecond) // each in a batch of its own
	}
	changed := tk.Clone()
	changed.Status = task.Failed
	r.bus.Publish(event.Event{Type: event.TaskChanged, Task: &changed, Prev: task.Done})
	r.found(t, search.Query{Q: "docs", Status: string(task.Failed)})
	eventually(t, "the new status's write", func() bool { return r.idx.Updates() >= 2 })
	time.Sleep(300 * time.Millisecond)
	if n := r.idx.Updates(); n != 2 {
		t.Fatalf("the index was handed %d writes; want 2 (the task, then its new status), none for the changes that left it as it was", n)
	}
}

func TestAPhraseMatchesOnlyAsWritten(t *testing.T) {
	r := newRig(t)
	r.start(t, "one")
	r.chat(t, "Release", "please cut the release branch today")
	r.chat(t, "Other", "the branch for the release is cut")
	res := r.found(t, search.Query{Q: `"release branch"`})
	if len(res.Hits) != 1 || res.Hits[0].Title != "Release" {
		t.Fatalf("phrase hits %+v; want the one chat that says it", res.Hits)
	}
	if res := r.find(t, search.Query{Q: "release branch"}); len(res.Hits) < 2 {
		t.Fatalf("words found %d hits; want both chats", len(res.Hits))
	}
}

func TestADeletedTaskIsGone(t *testing.T) {
	r := newRig(t)
	r.start(t, "one")
	tk := r.task(t, "Quarterly zeppelin report", "write it", "zeppelin numbers\n")
	r.found(t, search.Query{Q: "zeppelin"})
	if err := r.st.DeleteTask(tk.ID); err != nil {
		t.Fatal(err)
	}
	r.bus.Publish(event.Event{Type: event.TaskDeleted, ID: tk.ID, Prev: task.Done})
	eventually(t, "the deleted task to be gone", func() bool { return len(r.find(t, search.Query{Q: "zeppelin"}).Hits) == 0 })
}

func TestAMissingOrCorruptOrForeignIndexIsRebuiltFromTheStore(t *testing.T) {
	r := newRig(t)
	r.start(t, "one")
	r.task(t, "Tune the harpsichord", "tune", "")
	r.found(t, search.Query{Q: "harpsichord"})
	r.idx.Stop()

	// Written while search was not running: only a rebuild finds it.
	r.chat(t, "Bassoon repairs", "the bassoon needs a reed")
	dir := filepath.Join(r.dir, "search")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	r.start(t, "one")
	for _, w := range []string{"harpsichord", "bassoon"} {
		if len(r.find(t, search.Query{Q: w}).Hits) == 0 {
			t.Fatalf("%q not found after rebuilding a missing index", w)
		}
	}

	r.idx.Stop()
	// Scribble over every file of the index.
	_ = filepath.Walk(filepath.Join(dir, "index"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			_ = os.WriteFile(p, []byte("not an index"), 0o600)
		}
		return nil
	})
	r.start(t, "one")
	if len(r.find(t, search.Query{Q: "bassoon"}).Hits) == 0 {
		t.Fatal("not found after rebuilding a corrupt index")
	}

	r.idx.Stop()
	r.chat(t, "Cello", "a cello case")
	r.start(t, "two") // another store: a restore
	if len(r.find(t, search.Query{Q: "cello"}).Hits) == 0 {
		t.Fatal("an index of another store was kept")
	}
}

func TestFiltersNarrowAndBadQueriesAreRefused(t *testing.T) {
	r := newRig(t)
	r.start(t, "one")
	c := r.chat(t, "Walrus plans", "walrus feeding")
	r.task(t, "Walrus census", "count", "walrus 12\n")
	r.found(t, search.Query{Q: "walrus", Kind: search.KindOutput})
	all := r.find(t, search.Query{Q: "walrus"})
	if all.Total < 3 {
		t.Fatalf("total %d; want the chat, the task and its output", all.Total)
	}
	if res := r.find(t, search.Query{Q: "walrus", Conversation: c.ID}); len(res.Hits) == 0 || res.Hits[0].Conversation != c.ID {
		t.Fatalf("conversation filter gave %+v", res.Hits)
	}
	if res := r.find(t, search.Query{Q: "walrus", Kind: search.KindTask}); len(res.Hits) != 1 || res.Hits[0].Kind != search.KindTask {
		t.Fatalf("kind filter gave %+v", res.Hits)
	}
	if res := r.find(t, search.Query{Q: "walrus", To: time.Now().Add(-time.Hour)}); len(res.Hits) != 0 {
		t.Fatalf("a date range before everything found %+v", res.Hits)
	}
	page := r.find(t, search.Query{Q: "walrus", Limit: 1})
	if page.Next == "" {
		t.Fatal("a first page of one hit had no next")
	}
	if next := r.find(t, search.Query{Q: "walrus", Limit: 1, Cursor: page.Next}); len(next.Hits) != 1 {
		t.Fatalf("the next page gave %d hits", len(next.Hits))
	}
	for _, q := range []search.Query{{}, {Q: strings.Repeat("x", 201)}, {Q: "a", Kind: "nope"}, {Q: "a", Cursor: "zz"}, {Q: `""`}, {Q: "a", Limit: 99}} {
		if _, err := r.idx.Search(q); !errors.Is(err, search.ErrInvalid) {
			t.Errorf("Search(%+v) gave %v; want ErrInvalid", q, err)
		}
	}
}

func FuzzQueriesNeverFailButAsInvalid(f *testing.F) {
	for _, s := range []string{"walrus", `"a b"`, `"`, "-x +y", "title:x", "*", "é\u0301", "\x00", `a"b"c"`} {
		f.Add(s)
	}
	dir := f.TempDir()
	st, err := store.Open(filepath.Join(dir, "conch.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	bus := event.NewBus()
	defer bus.Close()
	idx := search.New(search.Config{Dir: filepath.Join(dir, "search"), Store: st, Bus: bus})
	if err := idx.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	defer idx.Stop()
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := idx.Search(search.Query{Q: q}); err != nil && !errors.Is(err, search.ErrInvalid) {
			t.Fatalf("Search(%q) failed: %v", q, err)
		}
	})
}
