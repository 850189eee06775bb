package store

import (
	"errors"
	"testing"
	"time"

	"conch/backend/task"
)

// Routines are kept across a reopen, oldest first, and a deleted one is
// gone (a second delete is not found).
func TestRoutinesReopen(t *testing.T) {
	s, path := openTest(t)
	later := epoch.Add(time.Minute)
	rs := []Routine{
		{ID: "b", Name: "Standup notes", Kind: RoutinePrompt, Text: "summarise", Schedule: "0 9 * * 1-5", Cwd: "/", Mode: task.Ask, Provider: "p", CatchUp: true, CreatedAt: later, Rev: 1},
		{ID: "a", Name: "Backup", Kind: RoutineCommand, Text: "make backup", Schedule: "*/15 * * * *", TimeZone: "Europe/Paris", Cwd: "/", Mode: task.Auto, Provider: "shell", CreatedAt: epoch, Rev: 1},
	}
	for _, r := range rs {
		if err := s.PutRoutine(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Routines()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[1].Name != "Standup notes" || !got[1].CatchUp || got[0].TimeZone != "Europe/Paris" {
		t.Fatalf("routines after reopen = %+v", got)
	}
	if err := s.DeleteRoutine("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoutine("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if got, _ := s.Routines(); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("after delete: %+v", got)
	}
}
