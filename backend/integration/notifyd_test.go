package integration

import (
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"

	"conch/backend/testrig/dbustest"
)

// notifyd is a notification server (org.freedesktop.Notifications) on a
// private session bus that keeps every Notify call. `conch serve` started
// with DBUS_SESSION_BUS_ADDRESS set to its bus sends its notifications
// here, across every restart.
type notifyd struct {
	addr string

	mu    sync.Mutex
	calls []notification
	next  uint32
}

// notification is one Notify call.
type notification struct {
	Tag, Title string
}

// finish reports whether the notification tells a task's finish (not its
// question: "— needs your OK", which a resumed task may ask again).
func (n notification) finish() bool {
	return strings.Contains(n.Title, " — done") || strings.Contains(n.Title, " — didn't finish")
}

func startNotifyd(t *testing.T) *notifyd {
	t.Helper()
	n := &notifyd{addr: dbustest.Start(t)}
	conn := dbustest.Connect(t, n.addr)
	if err := conn.Export(n, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the notification name: %v %v", reply, err)
	}
	return n
}

// Notify is the D-Bus method Conch calls.
func (n *notifyd) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	tag, _ := hints["x-dunst-stack-tag"].Value().(string)
	n.calls = append(n.calls, notification{Tag: tag, Title: summary})
	n.next++
	return n.next, nil
}

// GetServerInformation is asked first, to see that a server is there.
func (n *notifyd) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "crash-notifyd", "conch tests", "1.0", "1.2", nil
}

// GetCapabilities says the server shows actions.
func (n *notifyd) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"actions", "body"}, nil
}

// CloseNotification does nothing.
func (n *notifyd) CloseNotification(uint32) *dbus.Error { return nil }

// finishes counts the finish notifications of each tag.
func (n *notifyd) finishes() map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]int{}
	for _, c := range n.calls {
		if c.finish() {
			out[c.Tag]++
		}
	}
	return out
}
