package notify_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"conch/backend/event"
	"conch/backend/notify"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/provider/shell"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/testrig/dbustest"
)

type notifyCall struct {
	ReplacesID uint32
	ID         uint32
	Summary    string
	Body       string
	Actions    []string
	Tag        string
	Hints      map[string]dbus.Variant
	Expire     int32
}

// server is a notification server that records every Notify and
// CloseNotification call.
type server struct {
	conn   *dbus.Conn
	mu     sync.Mutex
	calls  []notifyCall
	closed []uint32
	next   uint32
	caps   []string // what GetCapabilities says; nil: actions and body
}

func (s *server) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := replaces
	if id == 0 {
		s.next++
		id = s.next
	}
	tag, _ := hints["x-dunst-stack-tag"].Value().(string)
	s.calls = append(s.calls, notifyCall{ReplacesID: replaces, ID: id, Summary: summary, Body: body, Actions: actions, Tag: tag,
		Hints: hints, Expire: timeout})
	return id, nil
}

func (s *server) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "fake-notifyd", "conch tests", "1.0", "1.2", nil
}

func (s *server) GetCapabilities() ([]string, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.caps != nil {
		return s.caps, nil
	}
	return []string{"actions", "body"}, nil
}

func (s *server) CloseNotification(id uint32) *dbus.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = append(s.closed, id)
	return nil
}

// closedIDs are the ids Conch asked to close, in order.
func (s *server) closedIDs() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint32(nil), s.closed...)
}

func (s *server) snapshot() []notifyCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]notifyCall(nil), s.calls...)
}

func (s *server) invoke(t *testing.T, id uint32, action string) {
	t.Helper()
	if err := s.conn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", id, action); err != nil {
		t.Fatal(err)
	}
}

func startServer(t *testing.T, addr string) *server {
	t.Helper()
	conn := dbustest.Connect(t, addr)
	s := &server{conn: conn}
	if err := conn.Export(s, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the name: %v %v", reply, err)
	}
	return s
}

// app is the runner and notification service over one home, as Conch wires
// them.
type app struct {
	runner  *taskrun.Runner
	service *notify.Service
	dbus    *notify.DBus
	st      store.Store
	bus     *event.Bus
	opened  chan string
	topics  pref.Topics
	dir     string
	log     syncBuffer
}

// syncBuffer is a log's output, written from the service's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func startApp(t *testing.T, addr, home, dir string, topics pref.Topics) *app {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	a := &app{st: st, bus: event.NewBus(), opened: make(chan string, 4), topics: topics, dir: dir}
	a.runner = taskrun.New(taskrun.Config{
		Store: st, Bus: a.bus, Logs: output.New(filepath.Join(home, "tasks")), Home: dir,
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: dir}},
	})
	// In Conch's order: the notifier, the service that sends through it,
	// the runner, and then the service starts and takes the clicks.
	a.dbus, err = notify.NewDBus(dbustest.Connect(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	a.service = notify.NewService(notify.Config{
		Tasks: a.runner, Bus: a.bus, Notifier: a.dbus,
		Topics: func() pref.Topics { return a.topics },
		Open:   func(id string) { a.opened <- id },
		Log:    slog.New(slog.NewTextHandler(&a.log, nil)),
	})
	if err := a.runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.service.Start(context.Background())
	t.Cleanup(a.stop)
	return a
}

func (a *app) stop() {
	a.service.Stop()
	a.runner.Stop()
	a.dbus.Close()
	a.bus.Close()
	_ = a.st.Close()
}

func (a *app) create(t *testing.T, text string, mode task.Mode) task.Task {
	t.Helper()
	tk, err := a.runner.Create(taskrun.CreateRequest{Text: text, Options: taskrun.Options{Mode: string(mode), Cwd: a.dir}})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func waitCalls(t *testing.T, s *server, n int) []notifyCall {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		calls := s.snapshot()
		if len(calls) >= n {
			// Give a duplicate the chance to show up before counting.
			time.Sleep(300 * time.Millisecond)
			return s.snapshot()
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d notifications, want %d: %+v", len(calls), n, calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitStatus(t *testing.T, r *taskrun.Runner, id string, s task.Status) task.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk, err := r.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status == s {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task is %s, want %s", tk.Status, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var allTopics = pref.Topics{Tasks: true, Approvals: true}

func TestOneNotificationPerFinishWithTheTaskTag(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	home, dir := t.TempDir(), t.TempDir()
	a := startApp(t, addr, home, dir, allTopics)
	if got := a.dbus.Describe(); got != "fake-notifyd 1.0 over D-Bus" {
		t.Fatalf("describe %q", got)
	}

	tk := a.create(t, "echo all good", task.Auto)
	calls := waitCalls(t, srv, 1)
	if len(calls) != 1 {
		t.Fatalf("%d notifications for one finish: %+v", len(calls), calls)
	}
	c := calls[0]
	if c.Tag != "task-"+tk.ID || c.Summary != "echo all good — done: all good" || c.Body != "Exited with code 0." {
		t.Fatalf("notification %+v", c)
	}
	if strings.Join(c.Actions, ",") != "default,Open" {
		t.Fatalf("actions %v", c.Actions)
	}
	if done, _ := a.runner.Get(tk.ID); !done.Notified {
		t.Fatal("the finish was not recorded as notified")
	}

	// Clicking it opens the chat the task came from.
	srv.invoke(t, c.ID, "default")
	select {
	case id := <-a.opened:
		if id != tk.ID {
			t.Fatalf("opened %s", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("clicking the notification opened nothing")
	}

	// A failure says why.
	bad := a.create(t, "exit 7", task.Auto)
	calls = waitCalls(t, srv, 2)
	if calls[1].Tag != "task-"+bad.ID || calls[1].Summary != "exit 7 — didn't finish" || calls[1].Body != "Exited with code 7." {
		t.Fatalf("failure notification %+v", calls[1])
	}

	// A restart sends nothing for finishes already announced.
	a.stop()
	a2 := startApp(t, addr, home, dir, allTopics)
	time.Sleep(500 * time.Millisecond)
	if n := len(srv.snapshot()); n != 2 {
		t.Fatalf("restart sent %d more notifications", n-2)
	}
	// A retry that finishes again notifies again, under the same tag.
	if _, err := a2.runner.Retry(tk.ID); err != nil {
		t.Fatal(err)
	}
	calls = waitCalls(t, srv, 3)
	if len(calls) != 3 || calls[2].Tag != "task-"+tk.ID {
		t.Fatalf("after retry: %+v", calls)
	}
}

func TestApprovalNotificationAnswersTheTask(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	a := startApp(t, addr, t.TempDir(), t.TempDir(), allTopics)

	tk := a.create(t, "echo allowed", task.Ask)
	calls := waitCalls(t, srv, 1)
	ask := calls[0]
	if ask.Tag != "task-"+tk.ID || ask.Summary != "echo allowed — needs your OK" || ask.Body != "Run echo allowed in ~?" {
		t.Fatalf("approval %+v", ask)
	}
	if strings.Join(ask.Actions, ",") != "default,Open,allow,Allow,deny,Deny" {
		t.Fatalf("actions %v", ask.Actions)
	}
	srv.invoke(t, ask.ID, "allow")
	waitStatus(t, a.runner, tk.ID, task.Done)
	calls = waitCalls(t, srv, 2)
	// Answered, the question goes (it would never time out); the finish
	// is news of its own, under the same tag.
	if closed := srv.closedIDs(); len(closed) != 1 || closed[0] != ask.ID {
		t.Fatalf("the answered question was not taken down: closed %v", closed)
	}
	if len(calls) != 2 || calls[1].ReplacesID != 0 || calls[1].Tag != ask.Tag {
		t.Fatalf("the finish: %+v", calls)
	}
	// A second press of the button is refused quietly: nothing changes.
	srv.invoke(t, ask.ID, "allow")
	time.Sleep(200 * time.Millisecond)
	if got, _ := a.runner.Get(tk.ID); got.Status != task.Done || got.Rev == 0 {
		t.Fatalf("second answer changed the task: %+v", got)
	}

	denied := a.create(t, "echo refused", task.Ask)
	calls = waitCalls(t, srv, 3)
	srv.invoke(t, calls[2].ID, "deny")
	f := waitStatus(t, a.runner, denied.ID, task.Failed)
	if f.Error != "You declined" {
		t.Fatalf("denied: %q", f.Error)
	}
}

func TestTopicsOffSendNothing(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	a := startApp(t, addr, t.TempDir(), t.TempDir(), pref.Topics{})
	done := a.create(t, "echo quiet", task.Auto)
	waitStatus(t, a.runner, done.ID, task.Done)
	asking := a.create(t, "echo quiet", task.Ask)
	waitStatus(t, a.runner, asking.ID, task.NeedsYou)
	time.Sleep(300 * time.Millisecond)
	if calls := srv.snapshot(); len(calls) != 0 {
		t.Fatalf("topics off, yet %d notifications: %+v", len(calls), calls)
	}
	if got, _ := a.runner.Get(done.ID); got.Notified {
		t.Fatal("marked notified though nothing was sent")
	}
}

func TestNoServerIsReported(t *testing.T) {
	addr := dbustest.Start(t)
	_, err := notify.NewDBus(dbustest.Connect(t, addr))
	if err == nil || !strings.Contains(err.Error(), notify.ErrNoServer.Error()) {
		t.Fatalf("want ErrNoServer, got %v", err)
	}
}

func TestFinishMessageNamesAKeptBranch(t *testing.T) {
	code := 0
	m := notify.FinishMessage(task.Task{ID: "x", Title: "Fix it", Status: task.Done, Summary: "3 files changed\nmore",
		Worktree: &task.Worktree{Branch: "conch/x", Kept: true}, ExitCode: &code})
	want := notify.Message{Tag: "task-x", Title: "Fix it — done: 3 files changed", Body: "Its work is on branch conch/x."}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Fatalf("got %+v", m)
	}
}

// A server that reads the body as markup gets it escaped, so a command
// with && or <file> reads as written; one that reads plain text gets it as
// it is. The summary is plain text for every server.
func TestTheBodyIsEscapedOnlyForAServerThatReadsMarkup(t *testing.T) {
	const body = "Run `make && make test > <log>` in ~/src?"
	for _, tc := range []struct {
		caps []string
		want string
	}{
		{[]string{"actions", "body", "body-markup"}, "Run `make &amp;&amp; make test &gt; &lt;log&gt;` in ~/src?"},
		{[]string{"actions", "body"}, body},
	} {
		addr := dbustest.Start(t)
		srv := startServer(t, addr)
		srv.mu.Lock()
		srv.caps = tc.caps
		srv.mu.Unlock()
		d, err := notify.NewDBus(dbustest.Connect(t, addr))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Send(notify.Message{Tag: "task-1", Title: "Build && test", Body: body}); err != nil {
			t.Fatal(err)
		}
		_ = d.Close()
		calls := srv.snapshot()
		if len(calls) != 1 || calls[0].Body != tc.want || calls[0].Summary != "Build && test" {
			t.Errorf("caps %v: sent %+v, want body %q", tc.caps, calls, tc.want)
		}
	}
}
