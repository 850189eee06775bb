//go:build linux

package hostlink_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/host"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/testrig/sshd"
)

// lines is "line 1\n" … "line n\n".
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// A shell task sent to a host runs there, as the host's user in that
// user's home, its output streams here while it runs, and it ends done.
// The host user's login shell prints text and execs another shell, as
// people's do: the runner starts all the same.
func TestAShellTaskRunsOnTheHost(t *testing.T) {
	r := newRig(t, sshd.Options{RC: map[string]string{".bashrc": "echo 'welcome to the box'\nexec zsh\n"}}, false)
	sub := r.bus.Subscribe(1024)
	defer sub.Close()
	tk := r.send(`id -un; pwd; for i in 1 2 3 4 5; do echo "line $i"; sleep 0.2; done`, taskrun.Options{})
	if tk.Host != "box" || tk.Cwd != "~" {
		t.Fatalf("sent as %+v", tk)
	}
	end := r.ended(tk.ID)
	if end.Status != task.Done {
		t.Fatalf("ended %s: %s", end.Status, end.Error)
	}
	if got, want := r.output(tk.ID), r.s.User+"\n"+r.s.Home+"\n"+lines(5); got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if end.ExitCode == nil || *end.ExitCode != 0 || end.OutputBytes != int64(len(r.output(tk.ID))) {
		t.Fatalf("ended with exit %v and %d bytes", end.ExitCode, end.OutputBytes)
	}
	// It streamed: the record said it had output while it still ran.
	streamed := false
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		if ev.Type == event.TaskChanged && ev.Task.ID == tk.ID && ev.Task.Status == task.Running && ev.Task.OutputBytes > 0 {
			streamed = true
		}
	}
	if !streamed {
		t.Fatal("no running copy of the task had output: it did not stream")
	}
	// The runner is there, in the versioned folder, and on a socket only
	// its user reaches.
	if _, err := os.Stat(r.s.Home + "/.conch-remote/" + version + "/conch"); err != nil {
		t.Fatal(err)
	}
	if r.runnerPid() == 0 {
		t.Fatal("no runner serves on the host")
	}
	h, _ := r.hosts.Get("box")
	if h.Status != store.HostReady || h.Since != nil {
		t.Fatalf("host after the task: %s since %v (%s)", h.Status, h.Since, h.Reason)
	}
}

// Stop ends the task's whole tree on the host within 2 s, and the task
// ends stopped here.
func TestStopEndsTheTreeThere(t *testing.T) {
	r := newRig(t, sshd.Options{}, false)
	tk := r.send(`echo started; (sleep 300; echo never) & sleep 301; echo never`, taskrun.Options{})
	r.wait(tk.ID, 60*time.Second, "its output", func(t task.Task) bool { return t.OutputBytes > 0 })
	if ps := r.processes("sleep 30"); len(ps) != 2 {
		t.Fatalf("the host runs %q, want both sleeps", ps)
	}
	start := time.Now()
	if _, err := r.tasks.StopTask(tk.ID); err != nil {
		t.Fatal(err)
	}
	end := r.ended(tk.ID)
	if end.Status != task.Stopped {
		t.Fatalf("ended %s: %s", end.Status, end.Error)
	}
	for time.Since(start) < 2*time.Second && len(r.processes("sleep 30")) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if ps := r.processes("sleep 30"); len(ps) > 0 {
		t.Fatalf("2 s after Stop the host still runs %q", ps)
	}
	if got := r.output(tk.ID); got != "started\n" {
		t.Fatalf("output %q", got)
	}
}

// A question asked on the host comes to this computer's inbox; the
// answer given here goes back, and the command runs there.
func TestAQuestionThereIsAnsweredHere(t *testing.T) {
	r := newRig(t, sshd.Options{}, false)
	tk := r.send(`echo asked > answered.txt; cat answered.txt`, taskrun.Options{Mode: "ask"})
	asking := r.wait(tk.ID, 60*time.Second, "a question", func(t task.Task) bool { return t.Status == task.NeedsYou })
	if asking.Ask == nil || !strings.Contains(asking.Ask.Detail, "answered.txt") {
		t.Fatalf("asked %+v", asking.Ask)
	}
	if _, err := os.Stat(r.s.Home + "/answered.txt"); err == nil {
		t.Fatal("it ran before the answer")
	}
	if _, err := r.tasks.Answer(tk.ID, asking.Ask.ID, true); err != nil {
		t.Fatal(err)
	}
	end := r.ended(tk.ID)
	if end.Status != task.Done || r.output(tk.ID) != "asked\n" {
		t.Fatalf("ended %s (%s) with %q", end.Status, end.Error, r.output(tk.ID))
	}
	if b, err := os.ReadFile(r.s.Home + "/answered.txt"); err != nil || string(b) != "asked\n" {
		t.Fatalf("on the host: %q %v", b, err)
	}
	// Deleted here, it goes there too, with its log.
	log := r.s.Home + "/.conch-remote/home/tasks/" + tk.ID + "/" + output.FileName
	if _, err := os.Stat(log); err != nil {
		t.Fatalf("the host keeps no log of it: %v", err)
	}
	if err := r.tasks.Delete(tk.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(log); err == nil; _, err = os.Stat(log) {
		if time.Now().After(deadline) {
			t.Fatal("the task deleted here is still on the host")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The SSH connection dropping mid-task leaves the task working there;
// the desktop reaches it again, and the task ends done here with every
// line once.
func TestALostConnectionIsNotALostTask(t *testing.T) {
	r := newRig(t, sshd.Options{}, false)
	tk := r.send(`for i in $(seq 1 30); do echo "line $i"; sleep 0.1; done`, taskrun.Options{})
	r.wait(tk.ID, 60*time.Second, "its output", func(t task.Task) bool { return t.OutputBytes > 0 })
	sub := r.bus.Subscribe(4096)
	defer sub.Close()
	// The host's record is watched for "unreachable since" meanwhile (it
	// is out of reach for 100 ms at least, the first wait to reach it).
	var since *time.Time
	watching, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-watching:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if h, _ := r.hosts.Get("box"); h.Status == store.HostUnreachable && since == nil {
				since = h.Since
			}
		}
	}()
	if n := r.s.DropConnections(); n == 0 {
		t.Fatal("no connection to drop")
	}
	end := r.ended(tk.ID)
	close(watching)
	<-watched
	if since == nil {
		t.Fatal("the host was never unreachable since a time")
	}
	// While it was away, the card said so.
	said := false
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		if ev.Type == event.TaskChanged && ev.Task.ID == tk.ID && ev.Task.Current == "box is unreachable; it carries on there" {
			said = true
		}
	}
	if !said {
		t.Fatal("the task never said its host was out of reach")
	}
	if end.Status != task.Done {
		t.Fatalf("ended %s: %s", end.Status, end.Error)
	}
	if got := r.output(tk.ID); got != lines(30) {
		t.Fatalf("output %q, want every line once", got)
	}
	if h, _ := r.hosts.Get("box"); h.Status != store.HostReady || h.Since != nil {
		t.Fatalf("host after the reconnect: %s since %v", h.Status, h.Since)
	}
}

// The desktop stopping mid-task (quit, or killed: the record stays
// running either way) leaves the task working there; the next start
// follows it again, and it ends done here with every line once.
func TestADesktopRestartFollowsTheTaskAgain(t *testing.T) {
	r := newRig(t, sshd.Options{}, false)
	tk := r.send(`for i in $(seq 1 30); do echo "line $i"; sleep 0.1; done`, taskrun.Options{})
	r.wait(tk.ID, 60*time.Second, "its output", func(t task.Task) bool { return t.OutputBytes > 0 })
	r.close()
	kept, err := store.Open(r.dir + "/conch.db")
	if err != nil {
		t.Fatal(err)
	}
	left, err := kept.Task(tk.ID)
	_ = kept.Close()
	if err != nil || left.Status != task.Running {
		t.Fatalf("left as %s (%v): it should still be running there", left.Status, err)
	}
	time.Sleep(time.Second) // it works on without the desktop
	r.open()
	end := r.ended(tk.ID)
	if end.Status != task.Done {
		t.Fatalf("ended %s: %s", end.Status, end.Error)
	}
	if got := r.output(tk.ID); got != lines(30) {
		t.Fatalf("output %q, want every line once", got)
	}
}

// The runner killed mid-task (a host that rebooted) heals as a local
// Conch does: the task is interrupted, saying where, and Retry runs it
// there again.
func TestARunnerThatDiedInterruptsItsTasks(t *testing.T) {
	r := newRig(t, sshd.Options{}, false)
	tk := r.send(`echo once >> runs.txt; sleep 300`, taskrun.Options{})
	r.wait(tk.ID, 60*time.Second, "running there", func(task.Task) bool { return len(r.processes("sleep 300")) > 0 })
	pid := r.runnerPid()
	if pid == 0 {
		t.Fatal("no runner")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	end := r.ended(tk.ID)
	if end.Status != task.Interrupted || !strings.Contains(end.Error, "runner on box stopped") {
		t.Fatalf("ended %s: %s", end.Status, end.Error)
	}
	if ps := r.processes("sleep 300"); len(ps) > 0 {
		t.Fatalf("the dead runner's command still runs: %q", ps)
	}
	if _, err := r.tasks.Retry(tk.ID); err != nil {
		t.Fatal(err)
	}
	r.wait(tk.ID, 60*time.Second, "running again", func(t task.Task) bool {
		return t.Status == task.Running && len(r.processes("sleep 300")) > 0
	})
	if b, _ := os.ReadFile(r.s.Home + "/runs.txt"); string(b) != "once\nonce\n" {
		t.Fatalf("runs there: %q", b)
	}
	if _, err := r.tasks.StopTask(tk.ID); err != nil {
		t.Fatal(err)
	}
	if end := r.ended(tk.ID); end.Status != task.Stopped {
		t.Fatalf("ended %s", end.Status)
	}
}

// A host that cannot be reached when the task is sent fails it at once,
// saying why; an unknown host is refused before anything is stored.
func TestAHostDownAtSendFailsAtOnce(t *testing.T) {
	r := newRig(t, sshd.Options{}, false)
	if _, _, err := r.hosts.Put("down", host.PutRequest{Target: "conch@127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	tk, err := r.tasks.Create(taskrun.CreateRequest{Text: "echo hi", Options: taskrun.Options{Host: "down", Mode: "auto"}})
	if err != nil {
		t.Fatal(err)
	}
	end := r.wait(tk.ID, 20*time.Second, "an end", func(t task.Task) bool { return t.Status.Finished() })
	if end.Status != task.Failed || !strings.Contains(end.Error, "down (conch@127.0.0.1:1) could not be reached, so nothing ran there: ssh: connect to host 127.0.0.1 port 1: Connection refused") {
		t.Fatalf("ended %s: %s", end.Status, end.Error)
	}
	_, err = r.tasks.Create(taskrun.CreateRequest{Text: "echo hi", Options: taskrun.Options{Host: "nowhere"}})
	if err == nil || !strings.Contains(err.Error(), "box, down") {
		t.Fatalf("an unknown host: %v", err)
	}
}

// An unknown host key runs nothing until the person accepts it: the task
// says it waits for that, and goes on once accepted.
func TestAnUnknownKeyRunsNothingUntilAccepted(t *testing.T) {
	r := newRig(t, sshd.Options{}, true)
	tk := r.send(`echo ran`, taskrun.Options{})
	r.wait(tk.ID, 30*time.Second, "waiting for the key", func(t task.Task) bool {
		return strings.Contains(t.Current, "accept the key of box")
	})
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(r.s.Home + "/.conch-remote"); err == nil {
		t.Fatal("Conch put its runner there before the key was accepted")
	}
	if strings.Contains(r.s.Logs(), "Accepted publickey") {
		t.Fatal("Conch signed in before the key was accepted")
	}
	h, _ := r.hosts.Get("box")
	if _, err := r.hosts.AcceptKey("box", host.AcceptRequest{Fingerprint: h.Fingerprint}); err != nil {
		t.Fatal(err)
	}
	if end := r.ended(tk.ID); end.Status != task.Done || r.output(tk.ID) != "ran\n" {
		t.Fatalf("ended %s (%s) with %q", end.Status, end.Error, r.output(tk.ID))
	}
}

// A host's limits are its own: with room for one there, a second task
// for it waits, while a task here runs at once.
func TestAHostHasLimitsOfItsOwn(t *testing.T) {
	r := newRig(t, sshd.Options{}, false)
	h, _ := r.hosts.Get("box")
	if _, _, err := r.hosts.Put("box", host.PutRequest{Target: h.Target, Limits: &pref.Limits{Background: 1, Helper: 1}, Rev: &h.Rev}); err != nil {
		t.Fatal(err)
	}
	first := r.send(`sleep 300`, taskrun.Options{})
	second := r.send(`sleep 301`, taskrun.Options{})
	r.wait(first.ID, 60*time.Second, "running there", func(task.Task) bool { return len(r.processes("sleep 300")) > 0 })
	if tk, _ := r.tasks.Get(second.ID); tk.Status != task.Queued {
		t.Fatalf("the second task for a host with room for one is %s", tk.Status)
	}
	here, err := r.tasks.Create(taskrun.CreateRequest{Text: "echo here", Options: taskrun.Options{Mode: "auto"}})
	if err != nil {
		t.Fatal(err)
	}
	if end := r.ended(here.ID); end.Status != task.Done {
		t.Fatalf("the task here ended %s: %s", end.Status, end.Error)
	}
	if _, err := r.tasks.StopTask(first.ID); err != nil {
		t.Fatal(err)
	}
	r.wait(second.ID, 60*time.Second, "running there", func(task.Task) bool { return len(r.processes("sleep 301")) > 0 })
	if _, err := r.tasks.StopTask(second.ID); err != nil {
		t.Fatal(err)
	}
	r.ended(second.ID)
}

// A desktop of a newer version replaces a runner of an older one that has
// nothing to do (its tasks stay, in the same home); a runner with work is
// left as it is until it has none.
func TestANewerDesktopUpgradesAnIdleRunner(t *testing.T) {
	r := newRig(t, sshd.Options{}, false)
	first := r.send(`echo one`, taskrun.Options{})
	if end := r.ended(first.ID); end.Status != task.Done {
		t.Fatalf("ended %s: %s", end.Status, end.Error)
	}
	busy := r.send(`sleep 300`, taskrun.Options{})
	r.wait(busy.ID, 60*time.Second, "running there", func(task.Task) bool { return len(r.processes("sleep 300")) > 0 })
	old := r.runnerPid()
	r.close()

	// Newer, while the old runner is busy: it is kept, and runs the task.
	newer := "hostlink-test-2"
	dir := buildOf(t, newer)
	r.builds = func(arch string) (string, string, error) {
		b, err := os.ReadFile(dir + "/conch-linux-" + arch + ".sha256")
		if err != nil {
			return "", "", err
		}
		return dir + "/conch-linux-" + arch, strings.Fields(string(b))[0], nil
	}
	r.version = newer
	r.open()
	// Stopped at once: before its run reached the host, the Stop is
	// carried there all the same.
	if _, err := r.tasks.StopTask(busy.ID); err != nil {
		t.Fatal(err)
	}
	r.ended(busy.ID)
	if ps := r.processes("sleep 300"); len(ps) > 0 {
		t.Fatalf("stopped here, it still runs there: %q", ps)
	}
	if pid := r.runnerPid(); pid != old {
		t.Fatalf("the busy runner (%d) was replaced by %d", old, pid)
	}

	// Idle now: the next connection replaces it, on the same home.
	r.close()
	r.open()
	second := r.send(`echo two`, taskrun.Options{})
	if end := r.ended(second.ID); end.Status != task.Done || r.output(second.ID) != "two\n" {
		t.Fatalf("ended %s (%s) with %q", end.Status, end.Error, r.output(second.ID))
	}
	pid := r.runnerPid()
	if pid == old || pid == 0 {
		t.Fatalf("the idle runner %d was not replaced (now %d)", old, pid)
	}
	if exe := sshd.Cmdline(pid); !strings.Contains(exe, "/.conch-remote/"+newer+"/conch runner") {
		t.Fatalf("the runner now is %q", exe)
	}
	if _, err := os.Stat(r.s.Home + "/.conch-remote/home/tasks/" + first.ID); err != nil {
		t.Fatalf("the first task's log went with the old runner: %v", err)
	}
}
