package notify_test

import (
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/pref"
	"conch/backend/task"
	"conch/backend/testrig/dbustest"
)

// notices collects the task.notice events on a bus.
func notices(t *testing.T, bus *event.Bus) func(n int) []event.Event {
	sub := bus.Subscribe(256)
	t.Cleanup(sub.Close)
	var got []event.Event
	return func(n int) []event.Event {
		t.Helper()
		deadline := time.After(10 * time.Second)
		settle := time.After(time.Hour)
		if n == 0 {
			settle = time.After(300 * time.Millisecond)
		}
		for {
			select {
			case ev := <-sub.C():
				if ev.Type == event.TaskNotice {
					got = append(got, ev)
					if len(got) == n {
						// Give a duplicate the chance to show up.
						settle = time.After(300 * time.Millisecond)
					}
				}
			case <-settle:
				return got
			case <-deadline:
				if len(got) >= n {
					return got
				}
				t.Fatalf("got %d notices, want %d: %+v", len(got), n, got)
			}
		}
	}
}

// Every notification the service raises is told on the bus as task.notice
// (the browser page and Web Push follow it), with the OS notification's
// words: once per finish and per question, never again after a restart,
// and not at all with the topics off.
func TestEveryNotificationIsToldOnTheBus(t *testing.T) {
	addr := dbustest.Start(t)
	startServer(t, addr)
	home, dir := t.TempDir(), t.TempDir()
	a := startApp(t, addr, home, dir, allTopics)
	wait := notices(t, a.bus)

	done := a.create(t, "echo all good", task.Auto)
	got := wait(1)
	if len(got) != 1 {
		t.Fatalf("%d notices for one finish: %+v", len(got), got)
	}
	n := got[0]
	if n.Task == nil || n.Task.ID != done.ID || !n.Task.Notified || n.Notice == nil ||
		*n.Notice != (event.Notice{Kind: event.NoticeFinished, Tag: "task-" + done.ID, Title: "echo all good — done: all good", Body: "Exited with code 0."}) {
		t.Fatalf("notice %+v %+v", n.Task, n.Notice)
	}
	asking := a.create(t, "echo may I", task.Ask)
	got = wait(2)
	if len(got) != 2 || got[1].Notice.Kind != event.NoticeQuestion || got[1].Notice.Tag != "task-"+asking.ID ||
		got[1].Task.Status != task.NeedsYou || got[1].Notice.Title != "echo may I — needs your OK" {
		t.Fatalf("question notice: %+v", got[1:])
	}

	a.stop()
	a2 := startApp(t, addr, home, dir, pref.Topics{})
	wait2 := notices(t, a2.bus)
	quiet := a2.create(t, "echo quiet", task.Auto)
	waitStatus(t, a2.runner, quiet.ID, task.Done)
	if got := wait2(0); len(got) != 0 {
		t.Fatalf("a restart with the topics off told %d notices: %+v", len(got), got)
	}
}
