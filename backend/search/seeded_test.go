package search_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/search"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/testrig/seed"
)

// seededTasks is how many tasks the seeded test's home holds: enough that
// the index is a year of use in shape (the benchmark runs the full
// 100,000); CONCH_SEARCH_SEED sets it.
func seededTasks() int {
	if n, err := strconv.Atoi(os.Getenv("CONCH_SEARCH_SEED")); err == nil && n > 0 {
		return n
	}
	return 2_000
}

// On a home seeded as heavy use leaves it (finished tasks, their chats and
// the person's chats), rebuilt from the store: one task's output word is
// found among all the rest, a phrase is told from its words, and a deleted
// task goes.
func TestSearchOnASeededHome(t *testing.T) {
	home := t.TempDir()
	if err := seed.Tasks(home, seededTasks(), time.Now()); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logs := output.New(filepath.Join(home, "tasks"))
	// One finished task among the seeded ones printed the word.
	now := time.Now().UTC()
	tk := task.Task{ID: store.NewID(), Kind: task.Background, Status: task.Done, Title: "Run the unit tests #odd",
		Text: "go test ./...", Mode: task.Auto, Cwd: "/", Provider: "shell", CreatedAt: now, EndedAt: &now}
	w, err := logs.Open(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("--- FAIL: TestCheckout (0.01s)\n    cart.go:12: the basket held a quokka\n"))
	_ = w.Close()
	if err := st.PutTask(tk); err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	defer bus.Close()
	idx := search.New(search.Config{Dir: filepath.Join(home, search.DirName), Store: st, Logs: logs, Bus: bus})
	if err := idx.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer idx.Stop()
	for deadline := time.Now().Add(2 * time.Minute); idx.Rebuilding() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the rebuild has not ended: %+v", idx.Rebuilding())
		}
	}

	res, err := idx.Search(search.Query{Q: "quokka"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].Task != tk.ID || res.Hits[0].Kind != search.KindOutput {
		t.Fatalf("quokka found %+v; want the one task's output", res.Hits)
	}
	phrase, err := idx.Search(search.Query{Q: `"the basket held"`})
	if err != nil {
		t.Fatal(err)
	}
	if len(phrase.Hits) != 1 {
		t.Fatalf("the phrase found %d hits", len(phrase.Hits))
	}
	if none, _ := idx.Search(search.Query{Q: `"held the basket"`}); len(none.Hits) != 0 {
		t.Fatalf("the words in another order matched as a phrase: %+v", none.Hits)
	}
	many, err := idx.Search(search.Query{Q: "unit tests", Kind: search.KindTask})
	if err != nil {
		t.Fatal(err)
	}
	if many.Total < uint64(seededTasks()/len("abcdefghijkl")) || many.Next == "" {
		t.Fatalf("“unit tests” found %d seeded tasks (next %q)", many.Total, many.Next)
	}
	if err := st.DeleteTask(tk.ID); err != nil {
		t.Fatal(err)
	}
	bus.Publish(event.Event{Type: event.TaskDeleted, ID: tk.ID, Prev: task.Done})
	eventually(t, "the deleted task to be gone", func() bool {
		r, err := idx.Search(search.Query{Q: "quokka"})
		return err == nil && len(r.Hits) == 0
	})
}
