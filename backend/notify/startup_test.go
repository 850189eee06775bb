package notify_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/notify"
	"conch/backend/output"
	"conch/backend/provider/shell"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/testrig/dbustest"
	"conch/backend/version"
)

// A click that comes while Conch starts, before the notification service
// exists, is kept by the notifier and handled once the service is up: an
// Allow on a question still waiting answers it, one on a question that no
// longer waits is dropped with a log line. Nothing reaches a service that
// is not there (it used to: a nil pointer on the D-Bus goroutine).
func TestAClickWhileConchStartsIsHandledOnceTheServiceIsUp(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	home, dir := t.TempDir(), t.TempDir()
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	runner := taskrun.New(taskrun.Config{Store: st, Bus: bus, Logs: output.New(filepath.Join(home, "tasks")), Home: dir,
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: dir}}})
	// The notifier opens first, with nothing to hand clicks to yet.
	d, err := notify.NewDBus(dbustest.Connect(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Stop(); d.Close(); bus.Close(); _ = st.Close() })

	// Two questions have their notifications up; one of them is settled
	// (stopped) before Conch is ready, the other still waits.
	asking := func(text string) (task.Task, uint32) {
		tk, err := runner.Create(taskrun.CreateRequest{Text: text, Options: taskrun.Options{Mode: string(task.Ask), Cwd: dir}})
		if err != nil {
			t.Fatal(err)
		}
		tk = waitStatus(t, runner, tk.ID, task.NeedsYou)
		if err := d.Send(notify.AskMessage(tk)); err != nil {
			t.Fatal(err)
		}
		return tk, d.ID(notify.Tag(tk.ID))
	}
	waiting, waitingID := asking("echo still waiting")
	stale, staleID := asking("echo settled meanwhile")
	if _, err := runner.StopTask(stale.ID); err != nil {
		t.Fatal(err)
	}
	srv.invoke(t, waitingID, notify.ActionAllow)
	srv.invoke(t, staleID, notify.ActionAllow)
	for deadline := time.Now().Add(10 * time.Second); d.Waiting() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the notifier kept %d clicks, want 2", d.Waiting())
		}
	}
	if got, _ := runner.Get(waiting.ID); got.Status != task.NeedsYou {
		t.Fatalf("answered before anything handles clicks: %s", got.Status)
	}

	var log syncBuffer
	service := notify.NewService(notify.Config{Tasks: runner, Bus: bus, Notifier: d, Log: slog.New(slog.NewTextHandler(&log, nil))})
	service.Start(context.Background())
	defer service.Stop()
	if n := d.Waiting(); n != 0 {
		t.Fatalf("%d clicks still kept after the service started", n)
	}
	waitStatus(t, runner, waiting.ID, task.Done)
	if got := log.String(); !strings.Contains(got, "answer from a notification dropped") || !strings.Contains(got, stale.ID) {
		t.Fatalf("the click on the settled question was not logged: %q", got)
	}
	if got, _ := runner.Get(stale.ID); got.Status == task.Done || got.Status == task.Running {
		t.Fatalf("the stopped task ran after all: %s", got.Status)
	}
}

// A question's notification never times out and is marked critical: it
// waits as long as the task does, and goes once it is answered (here in
// the app). A finish leaves the timeout to the server.
func TestAQuestionStaysUntilAnsweredAFinishMayExpire(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	a := startApp(t, addr, t.TempDir(), t.TempDir(), allTopics)

	tk := a.create(t, "echo wait for me", task.Ask)
	ask := waitCalls(t, srv, 1)[0]
	if ask.Expire != 0 {
		t.Fatalf("a question's expire_timeout is %d, want 0 (never)", ask.Expire)
	}
	if u, ok := ask.Hints["urgency"].Value().(byte); !ok || u != 2 {
		t.Fatalf("a question's urgency hint is %v, want byte 2 (critical)", ask.Hints["urgency"])
	}
	// The server finds the name and icon in the packages' desktop entry.
	if d, _ := ask.Hints["desktop-entry"].Value().(string); d != version.AppID {
		t.Fatalf("the desktop-entry hint is %q, want %q (the packages' %s.desktop)", d, version.AppID, version.AppID)
	}
	asked := waitStatus(t, a.runner, tk.ID, task.NeedsYou)
	if _, err := a.runner.Answer(tk.ID, asked.Ask.ID, true); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, a.runner, tk.ID, task.Done)
	finish := waitCalls(t, srv, 2)[1]
	if closed := srv.closedIDs(); len(closed) != 1 || closed[0] != ask.ID {
		t.Fatalf("answered in the app, the question's notification was not taken down: closed %v", closed)
	}
	if finish.Expire != -1 {
		t.Fatalf("a finish's expire_timeout is %d, want -1 (the server's)", finish.Expire)
	}
	if _, ok := finish.Hints["urgency"]; ok {
		t.Fatalf("a finish is marked urgent: %v", finish.Hints)
	}
}

// A destructive command's question warns as the page and the tray do, and
// every notification is plain text: no Markdown backticks.
func TestADestructiveQuestionSaysSoInPlainText(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	a := startApp(t, addr, t.TempDir(), t.TempDir(), allTopics)

	tk := a.create(t, "rm -r build-x", task.Ask)
	c := waitCalls(t, srv, 1)[0]
	if want := "⚠ Destructive: rm -r build-x — needs your OK"; c.Summary != want {
		t.Fatalf("summary %q, want %q", c.Summary, want)
	}
	if want := "Run rm -r build-x in ~?\n⚠ It deletes files and folders for good (rm -r), without asking again."; c.Body != want {
		t.Fatalf("body %q, want %q", c.Body, want)
	}
	srv.invoke(t, c.ID, notify.ActionDeny)
	waitStatus(t, a.runner, tk.ID, task.Failed)
}

// Conch closing takes down the questions it still shows: they never time
// out, and nothing would answer their buttons.
func TestClosingTakesDownTheQuestionsStillShown(t *testing.T) {
	addr := dbustest.Start(t)
	srv := startServer(t, addr)
	a := startApp(t, addr, t.TempDir(), t.TempDir(), allTopics)
	a.create(t, "echo never answered", task.Ask)
	ask := waitCalls(t, srv, 1)[0]
	a.stop()
	if closed := srv.closedIDs(); len(closed) != 1 || closed[0] != ask.ID {
		t.Fatalf("closed %v, want the question %d", closed, ask.ID)
	}
}
