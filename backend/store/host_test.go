package store

import (
	"errors"
	"testing"
	"time"

	"conch/backend/pref"
)

// Hosts are kept across a reopen, oldest first, and a deleted one is gone
// (a second delete is not found).
func TestHostsReopen(t *testing.T) {
	s, path := openTest(t)
	hs := []Host{
		{ID: "b", Name: "b", Target: "me@box:2222", Status: HostUnknownKey, Fingerprint: "SHA256:x", Limits: pref.Limits{Background: 3, Helper: 4}, CreatedAt: epoch.Add(time.Minute), Rev: 1},
		{ID: "a", Name: "a", Target: "devbox", Status: HostReady, Providers: []HostProvider{{ID: "claude", Path: "/bin/claude", Version: "2.1"}}, CreatedAt: epoch, Rev: 2},
	}
	for _, h := range hs {
		if err := s.PutHost(h); err != nil {
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
	got, err := s.Hosts()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[0].Providers[0].Version != "2.1" || got[1].Fingerprint != "SHA256:x" || got[1].Limits.Helper != 4 {
		t.Fatalf("hosts after reopen = %+v", got)
	}
	if err := s.DeleteHost("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteHost("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if got, _ := s.Hosts(); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("after delete: %+v", got)
	}
}
