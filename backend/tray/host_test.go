package tray

import (
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"conch/backend/testrig/dbustest"
)

// waitChanged fails the test when ch is not closed within the deadline.
func waitChanged(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("the host did not notice that %s", what)
	}
}

// Conch started before the panel (as at login) sees the tray host once the
// panel comes, and again when it goes: the doctor's check is not worked
// out once at start.
func TestHostFollowsTheWatcherComingAndGoing(t *testing.T) {
	addr := dbustest.Start(t)
	h, err := WatchHost(dbustest.Connect(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if ok, detail := h.State(); ok || detail != "no tray host (StatusNotifierWatcher) on the session bus" {
		t.Fatalf("no panel yet, but State says %v %q", ok, detail)
	}
	came := h.Changed()

	panel := dbustest.Connect(t, addr)
	if reply, err := panel.RequestName(watcherName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the watcher name: %v %v", reply, err)
	}
	waitChanged(t, came, "the panel came")
	if !h.Present() {
		t.Fatal("the panel came, yet Present is false")
	}
	if ok, detail := h.State(); !ok || detail != "a tray host is present" {
		t.Fatalf("the panel came, yet State says %v %q", ok, detail)
	}

	went := h.Changed()
	if _, err := panel.ReleaseName(watcherName); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, went, "the panel went")
	if h.Present() {
		t.Fatal("the panel went, yet Present is true")
	}
	h.Close()
	h.Close()
}
