package service

import (
	"testing"
	"time"
)

func TestANotificationsOpenWaitsForThePageOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	o := &Opens{Now: func() time.Time { return now }}
	s := New(Config{Opens: o})
	if id, err := s.TakeOpen(); id != "" || err != nil {
		t.Fatalf("nothing noted: %q %v", id, err)
	}
	o.Note("t1")
	o.Note("t2") // the newest click wins
	if id, _ := s.TakeOpen(); id != "t2" {
		t.Fatalf("took %q, want t2", id)
	}
	if id, _ := s.TakeOpen(); id != "" {
		t.Fatalf("took %q twice", id)
	}
	o.Note("t3")
	now = now.Add(OpenFresh)
	if id, _ := s.TakeOpen(); id != "" {
		t.Fatalf("a stale click was taken: %q", id)
	}
	if id, err := New(Config{}).TakeOpen(); id != "" || err != nil {
		t.Fatalf("a service without opens: %q %v", id, err)
	}
}
