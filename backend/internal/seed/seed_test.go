package seed

import (
	"path/filepath"
	"testing"
	"time"

	"conch/backend/store"
	"conch/backend/task"
)

func TestSeedFillsTheStoreWithFinishedTasks(t *testing.T) {
	home := t.TempDir()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if err := Tasks(home, 160, now); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.TaskCounts()
	if err != nil {
		t.Fatal(err)
	}
	// Every 20th stopped (8 of 160), the other multiples of 8 failed (20 - 4).
	if c[task.Stopped] != 8 || c[task.Failed] != 16 || c[task.Done] != 136 {
		t.Fatalf("counts %v", c)
	}
	p, err := st.TasksInGroup(store.GroupFinished, store.TaskFilter{}, "", 1)
	if err != nil || len(p.Tasks) != 1 || !p.Tasks[0].EndedAt.Equal(now) {
		t.Fatalf("newest: %+v %v", p.Tasks, err)
	}
	if a, _ := st.ActiveTasks(); len(a) != 0 {
		t.Fatalf("%d seeded tasks are not finished", len(a))
	}
}
