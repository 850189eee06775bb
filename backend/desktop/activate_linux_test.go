package desktop

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"conch/backend/testrig/dbustest"
)

// firstInstance stands in for Wails' single-instance listener in the Conch
// that is already running.
type firstInstance chan string

func (f firstInstance) SendMessage(message string) *dbus.Error {
	f <- message
	return nil
}

func TestActivateReachesTheRunningInstance(t *testing.T) {
	t.Parallel()
	addr := dbustest.Start(t)
	first := dbustest.Connect(t, addr)
	name, path := singleInstanceBusName(singleInstanceID)
	got := make(firstInstance, 1)
	if err := first.Export(got, path, name); err != nil {
		t.Fatal(err)
	}
	if reply, err := first.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request name: %v %v", reply, err)
	}

	second := dbustest.Connect(t, addr)
	if !activate(second, singleInstanceID, []string{"--home", "/x"}, "/work") {
		t.Fatal("activate = false with an instance running")
	}
	select {
	case msg := <-got:
		var data struct {
			Args             []string
			WorkingDirectory string
		}
		if err := json.Unmarshal([]byte(msg), &data); err != nil {
			t.Fatalf("message %q: %v", msg, err)
		}
		if len(data.Args) != 2 || data.Args[1] != "/x" || data.WorkingDirectory != "/work" {
			t.Fatalf("message %+v, want args [--home /x] in /work", data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the running instance got no message")
	}
}

func TestActivateWithNothingRunning(t *testing.T) {
	t.Parallel()
	conn := dbustest.Connect(t, dbustest.Start(t))
	if activate(conn, singleInstanceID, nil, "/") {
		t.Fatal("activate = true with nothing running")
	}
}

func TestBusNameMatchesWails(t *testing.T) {
	t.Parallel()
	name, path := singleInstanceBusName("dev.conch.a-b")
	if name != "org.wails_app_dev_conch_a_b.SingleInstance" || path != "/org/wails_app_dev_conch_a_b/SingleInstance" {
		t.Fatalf("got %s %s", name, path)
	}
}
