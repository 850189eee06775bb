package taskrun_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/provider/shell"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

type bundle struct {
	runner *taskrun.Runner
	store  store.Store
	bus    *event.Bus
	logs   *output.Logs
	dir    string // a working folder for commands
	home   string
	dbPath string
	mark   string // the home's process mark
}

type setupOpt func(*taskrun.Config)

// setup starts a runner over a real bbolt store and real shell commands.
func setup(t *testing.T, opts ...setupOpt) *bundle {
	t.Helper()
	home := t.TempDir()
	dir := t.TempDir()
	b := &bundle{dir: dir, home: home, dbPath: filepath.Join(home, "conch.db")}
	b.start(t, opts...)
	return b
}

func (b *bundle) start(t *testing.T, opts ...setupOpt) {
	t.Helper()
	st, err := store.Open(b.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	b.store, b.bus, b.logs = st, event.NewBus(), output.New(filepath.Join(b.home, "tasks"))
	if b.mark == "" {
		b.mark = "test-" + filepath.Base(b.home)
	}
	cfg := taskrun.Config{
		Store: st, Bus: b.bus, Logs: b.logs, Home: b.dir, HomeMark: b.mark,
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: b.dir, Grace: 300 * time.Millisecond}},
	}
	for _, o := range opts {
		o(&cfg)
	}
	b.runner = taskrun.New(cfg)
	if err := b.runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.stop)
}

func (b *bundle) stop() {
	b.runner.Stop()
	b.bus.Close()
	_ = b.store.Close()
}

func (b *bundle) create(t *testing.T, text string, mode task.Mode) task.Task {
	t.Helper()
	tk, err := b.runner.Create(taskrun.CreateRequest{Text: text, Options: taskrun.Options{Mode: string(mode), Cwd: b.dir}})
	if err != nil {
		t.Fatalf("create %q: %v", text, err)
	}
	return tk
}

// waitFor polls until the task satisfies ok, failing after 15 s.
func (b *bundle) waitFor(t *testing.T, id string, what string, ok func(task.Task) bool) task.Task {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		tk, err := b.runner.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never became %s; last: status=%s error=%q steps=%v", id, what, tk.Status, tk.Error, tk.Steps)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *bundle) waitStatus(t *testing.T, id string, s task.Status) task.Task {
	t.Helper()
	return b.waitFor(t, id, string(s), func(tk task.Task) bool { return tk.Status == s })
}

func (b *bundle) output(t *testing.T, id string) string {
	t.Helper()
	data, _, err := b.logs.ReadAt(id, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestShellTaskRunsToDone(t *testing.T) {
	b := setup(t)
	tk := b.create(t, "echo hello; echo world", task.Auto)
	if tk.Status != task.Queued || tk.Rev != 1 || tk.Title != "echo hello; echo world" || tk.Mode != task.Auto {
		t.Fatalf("new task: %+v", tk)
	}
	done := b.waitStatus(t, tk.ID, task.Done)
	if done.ExitCode == nil || *done.ExitCode != 0 {
		t.Fatalf("exit code %v", done.ExitCode)
	}
	if done.Summary != "hello\nworld" {
		t.Fatalf("summary %q", done.Summary)
	}
	if done.Result == nil || done.Result.Source != task.SourceExit {
		t.Fatalf("result %+v", done.Result)
	}
	wantSteps := []string{"Started echo hello; echo world", "Exited with code 0"}
	if strings.Join(done.Steps, "|") != strings.Join(wantSteps, "|") {
		t.Fatalf("steps %q", done.Steps)
	}
	if got := b.output(t, tk.ID); got != "hello\nworld\n" {
		t.Fatalf("output %q", got)
	}
	if done.OutputBytes != 12 || done.StartedAt == nil || done.EndedAt == nil || done.Current != "" {
		t.Fatalf("finished record: %+v", done)
	}
}

func TestDefaultModeIsAskAndCwdDefaultsToHome(t *testing.T) {
	b := setup(t)
	tk, err := b.runner.Create(taskrun.CreateRequest{Text: "pwd"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Mode != task.Ask || tk.Cwd != b.dir || tk.Provider != "shell" || tk.Kind != task.Background {
		t.Fatalf("defaults: %+v", tk)
	}
}

func TestNonZeroExitFails(t *testing.T) {
	b := setup(t)
	tk := b.create(t, "echo oops >&2; exit 3", task.Auto)
	f := b.waitStatus(t, tk.ID, task.Failed)
	if f.Error != "exited with code 3" || f.ExitCode == nil || *f.ExitCode != 3 {
		t.Fatalf("failed record: error=%q exit=%v", f.Error, f.ExitCode)
	}
	if f.Summary != "oops" {
		t.Fatalf("summary %q", f.Summary)
	}
}

func TestPlanModeRunsNothing(t *testing.T) {
	b := setup(t)
	marker := filepath.Join(b.dir, "ran")
	tk := b.create(t, "touch "+marker, task.Plan)
	f := b.waitStatus(t, tk.ID, task.Failed)
	if f.Error != "plan mode runs nothing" {
		t.Fatalf("error %q", f.Error)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("plan mode ran the command")
	}
}

func TestAskAllowRunsDenyFails(t *testing.T) {
	for _, mode := range []task.Mode{task.Ask, task.Edits} {
		t.Run(string(mode), func(t *testing.T) {
			b := setup(t)
			marker := filepath.Join(b.dir, "ran")
			tk := b.create(t, "touch "+marker, mode)
			asking := b.waitStatus(t, tk.ID, task.NeedsYou)
			q := asking.Ask
			if q == nil || q.Tool != "run_command" || q.Detail != "Run `touch "+marker+"` in ~?" {
				t.Fatalf("ask %+v", q)
			}
			if d := q.ExpiresAt.Sub(q.AskedAt); d != time.Hour {
				t.Fatalf("timeout %v", d)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("ran before the answer")
			}
			if inbox := b.runner.Approvals(); len(inbox) != 1 || inbox[0].TaskID != tk.ID || inbox[0].Ask.ID != q.ID || inbox[0].Cwd != b.dir {
				t.Fatalf("approvals %+v", inbox)
			}
			if _, err := b.runner.Answer(tk.ID, "wrong", true); !errors.Is(err, taskrun.ErrConflict) {
				t.Fatalf("wrong ask id: %v", err)
			}
			after, err := b.runner.Answer(tk.ID, q.ID, true)
			if err != nil {
				t.Fatal(err)
			}
			if after.Status != task.Running && after.Status != task.Done {
				t.Fatalf("after allow: %s", after.Status)
			}
			if _, err := b.runner.Answer(tk.ID, q.ID, true); !errors.Is(err, taskrun.ErrConflict) {
				t.Fatalf("second answer: %v", err)
			}
			b.waitStatus(t, tk.ID, task.Done)
			if inbox := b.runner.Approvals(); len(inbox) != 0 {
				t.Fatalf("answered question still in the inbox: %+v", inbox)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatal("allowed command did not run")
			}

			tk2 := b.create(t, "touch "+marker+"2", mode)
			q2 := b.waitStatus(t, tk2.ID, task.NeedsYou).Ask
			if _, err := b.runner.Answer(tk2.ID, q2.ID, false); err != nil {
				t.Fatal(err)
			}
			f := b.waitStatus(t, tk2.ID, task.Failed)
			if f.Error != "You declined" || f.Ask != nil {
				t.Fatalf("declined: %+v", f)
			}
			if _, err := os.Stat(marker + "2"); err == nil {
				t.Fatal("declined command ran")
			}
		})
	}
}

func TestUnansweredQuestionTimesOut(t *testing.T) {
	b := setup(t, func(c *taskrun.Config) { c.AskTimeout = 150 * time.Millisecond })
	tk := b.create(t, "true", task.Ask)
	f := b.waitStatus(t, tk.ID, task.Failed)
	if f.Error != "No answer within an hour" {
		t.Fatalf("error %q", f.Error)
	}
}

func TestSlotsAndFIFO(t *testing.T) {
	b := setup(t)
	release := filepath.Join(b.dir, "release")
	var ids []string
	for i := 0; i < 5; i++ {
		cmd := fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; echo %d", release, i)
		ids = append(ids, b.create(t, cmd, task.Auto).ID)
	}
	for _, id := range ids[:3] {
		b.waitStatus(t, id, task.Running)
	}
	for _, id := range ids[3:] {
		if tk, _ := b.runner.Get(id); tk.Status != task.Queued {
			t.Fatalf("task beyond the limit is %s", tk.Status)
		}
	}
	c := b.runner.Concurrent()
	if c.Background.Running != 3 || c.Background.Limit != 3 || c.Helper.Limit != 4 {
		t.Fatalf("concurrent %+v", c)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var started []time.Time
	for _, id := range ids {
		tk := b.waitStatus(t, id, task.Done)
		started = append(started, *tk.StartedAt)
	}
	if started[3].After(started[4]) {
		t.Fatalf("queue is not FIFO: 4th started %v, 5th %v", started[3], started[4])
	}
	if !started[3].After(started[2]) {
		t.Fatal("4th task started before a slot was free")
	}
}

func TestStopQueuedRunningAndAsking(t *testing.T) {
	b := setup(t)
	var running []task.Task
	for i := 0; i < 3; i++ {
		running = append(running, b.create(t, "sleep 30", task.Auto))
	}
	queued := b.create(t, "echo never", task.Auto)
	for _, r := range running {
		b.waitStatus(t, r.ID, task.Running)
	}
	st, err := b.runner.StopTask(queued.ID)
	if err != nil || st.Status != task.Stopped {
		t.Fatalf("stop queued: %v %+v", err, st)
	}
	stopped, err := b.runner.StopTask(running[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.Status != task.Stopped || stopped.Error != "" {
		t.Fatalf("stop running: %+v", stopped)
	}
	for _, r := range running[1:] {
		if _, err := b.runner.StopTask(r.ID); err != nil {
			t.Fatal(err)
		}
	}
	asking := b.create(t, "echo hi", task.Ask)
	b.waitStatus(t, asking.ID, task.NeedsYou)
	s2, err := b.runner.StopTask(asking.ID)
	if err != nil || s2.Status != task.Stopped || s2.Ask != nil {
		t.Fatalf("stop asking: %v %+v", err, s2)
	}
	if _, err := b.runner.StopTask(asking.ID); !errors.Is(err, task.ErrInvalidTransition) {
		t.Fatalf("stop a stopped task: %v", err)
	}
	if _, err := b.runner.StopTask("nope"); !errors.Is(err, taskrun.ErrNotFound) {
		t.Fatalf("stop unknown: %v", err)
	}
}

func TestStopKillsAfterGraceWhenTermIsIgnored(t *testing.T) {
	b := setup(t)
	tk := b.create(t, "trap '' TERM; echo ready; while true; do sleep 0.05; done", task.Auto)
	b.waitFor(t, tk.ID, "printing", func(tk task.Task) bool { return tk.OutputBytes > 0 })
	start := time.Now()
	st, err := b.runner.StopTask(tk.ID)
	if err != nil || st.Status != task.Stopped {
		t.Fatalf("%v %+v", err, st)
	}
	if time.Since(start) < 250*time.Millisecond {
		t.Fatal("stopped before the grace period: SIGTERM was not ignored?")
	}
}

func TestSignalledCommandFails(t *testing.T) {
	b := setup(t)
	tk := b.create(t, "kill -TERM $$", task.Auto)
	f := b.waitStatus(t, tk.ID, task.Failed)
	if f.Error != "killed by SIGTERM" {
		t.Fatalf("error %q", f.Error)
	}
}

func TestRetryRunsAgainFromTheStart(t *testing.T) {
	b := setup(t)
	tk := b.create(t, "echo run; exit 1", task.Auto)
	b.waitStatus(t, tk.ID, task.Failed)
	if _, err := b.runner.Retry(tk.ID); err != nil {
		t.Fatal(err)
	}
	again := b.waitStatus(t, tk.ID, task.Failed)
	if again.Summary != "run" {
		t.Fatalf("summary after retry %q: it should hold this run's output only", again.Summary)
	}
	if again.Rev <= 3 || len(again.Steps) != 2 {
		t.Fatalf("retried: rev %d steps %v", again.Rev, again.Steps)
	}
	if out := b.output(t, tk.ID); strings.Count(out, "run\n") != 2 || !strings.Contains(out, "tried again") {
		t.Fatalf("output after retry %q", out)
	}
	running := b.create(t, "sleep 30", task.Auto)
	b.waitStatus(t, running.ID, task.Running)
	if _, err := b.runner.Retry(running.ID); !errors.Is(err, task.ErrInvalidTransition) {
		t.Fatalf("retry running: %v", err)
	}
}

// A command cannot carry on from where it stopped: Resume says so (409)
// and changes nothing; Try again runs it from the start.
func TestACommandCannotResume(t *testing.T) {
	b := setup(t)
	tk := b.create(t, "exit 1", task.Auto)
	failed := b.waitStatus(t, tk.ID, task.Failed)
	_, err := b.runner.Resume(tk.ID)
	if !errors.Is(err, taskrun.ErrConflict) || !strings.Contains(err.Error(), "Try again runs it again from the start") {
		t.Fatalf("resume a command: %v", err)
	}
	if got, _ := b.runner.Get(tk.ID); got.Rev != failed.Rev || got.Status != task.Failed || got.Resume != nil {
		t.Fatalf("a refused resume changed the task: %+v", got)
	}
}

func TestDeleteRefusesRunningAndRemovesFinished(t *testing.T) {
	b := setup(t)
	running := b.create(t, "sleep 30", task.Auto)
	b.waitStatus(t, running.ID, task.Running)
	if err := b.runner.Delete(running.ID); !errors.Is(err, taskrun.ErrConflict) {
		t.Fatalf("delete running: %v", err)
	}
	done := b.create(t, "echo x", task.Auto)
	b.waitStatus(t, done.ID, task.Done)
	sub := b.bus.Subscribe(16)
	defer sub.Close()
	if err := b.runner.Delete(done.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.runner.Get(done.ID); !errors.Is(err, taskrun.ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	if _, err := b.store.Task(done.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("store still has it: %v", err)
	}
	if _, err := os.Stat(b.logs.Path(done.ID)); !os.IsNotExist(err) {
		t.Fatalf("output left behind: %v", err)
	}
	ev := <-sub.C()
	if ev.Type != event.TaskDeleted || ev.ID != done.ID {
		t.Fatalf("event %+v", ev)
	}
	if err := b.runner.Delete(done.ID); !errors.Is(err, taskrun.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

func TestCreateRefusesBadInput(t *testing.T) {
	b := setup(t)
	cases := []taskrun.CreateRequest{
		{Text: "  "},
		{Text: "ls", Options: taskrun.Options{Mode: "yolo"}},
		{Text: "ls", Options: taskrun.Options{Provider: "nope"}},
		{Text: "ls", Options: taskrun.Options{Cwd: "relative/dir"}},
		{Text: "ls", Options: taskrun.Options{Cwd: "/does/not/exist"}},
		{Text: strings.Repeat("x", 70<<10)},
	}
	for _, c := range cases {
		if _, err := b.runner.Create(c); !errors.Is(err, taskrun.ErrInvalid) {
			t.Errorf("create %+v: want ErrInvalid, got %v", c.Options, err)
		}
	}
	if tasks, _ := b.store.Tasks(); len(tasks) != 0 {
		t.Fatalf("refused requests left %d tasks", len(tasks))
	}
}

func TestEveryPublishedChangeIsAlreadyDurable(t *testing.T) {
	b := setup(t)
	sub := b.bus.Subscribe(1024)
	defer sub.Close()
	tk := b.create(t, "echo a; sleep 0.3; echo b", task.Auto)
	b.waitStatus(t, tk.ID, task.Done)
	seen := 0
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		if ev.Type == event.TaskOutput {
			continue // announced, never stored
		}
		stored, err := b.store.Task(ev.Task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Rev < ev.Task.Rev {
			t.Fatalf("published rev %d before it was stored (store has %d)", ev.Task.Rev, stored.Rev)
		}
		if ev.Task.Rev != int64(seen+1) {
			t.Fatalf("revs out of order: got %d after %d", ev.Task.Rev, seen)
		}
		seen++
	}
	if seen < 4 {
		t.Fatalf("only %d events", seen)
	}
}

func TestShutdownInterruptsAndRestartKeepsEverything(t *testing.T) {
	b := setup(t)
	tk := b.create(t, "echo before; sleep 30", task.Auto)
	b.waitFor(t, tk.ID, "printing", func(tk task.Task) bool { return tk.OutputBytes > 0 })
	done := b.create(t, "echo fine", task.Auto)
	b.waitStatus(t, done.ID, task.Done)
	b.stop()

	b.start(t)
	got, err := b.runner.Get(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != task.Interrupted || got.Error != taskrun.InterruptedReason {
		t.Fatalf("after restart: %s %q", got.Status, got.Error)
	}
	if out := b.output(t, tk.ID); out != "before\n" {
		t.Fatalf("output %q", out)
	}
	if d, _ := b.runner.Get(done.ID); d.Status != task.Done || d.Summary != "fine" {
		t.Fatalf("done task after restart: %+v", d)
	}
	if _, err := b.runner.Retry(tk.ID); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(t, tk.ID, task.Running)
}

// A command's start and end cost a write each at most: one that ends
// within launchHold has its start stored with its end (three revisions:
// queued, running, done), in order; a longer one has its pid stored while
// it runs.
func TestACommandCostsTheStoreFewWrites(t *testing.T) {
	b := setup(t)
	quick := b.create(t, "true", task.Auto)
	d := b.waitStatus(t, quick.ID, task.Done)
	if d.Rev != 3 || !slices.Equal(d.Steps, []string{"Started true", "Exited with code 0"}) {
		t.Fatalf("quick command: rev %d, steps %q, pid %d", d.Rev, d.Steps, d.Pid)
	}
	slow := b.create(t, "sleep 2", task.Auto)
	running := b.waitFor(t, slow.ID, "its pid stored", func(tk task.Task) bool { return tk.Pid != 0 })
	if running.Status != task.Running || running.Current != "Running sleep 2" || !slices.Equal(running.Steps, []string{"Started sleep 2"}) {
		t.Fatalf("slow command while it runs: %+v", running)
	}
	if _, err := b.runner.StopTask(slow.ID); err != nil {
		t.Fatal(err)
	}
	s := b.waitStatus(t, slow.ID, task.Stopped)
	if s.Steps[0] != "Started sleep 2" || s.Steps[len(s.Steps)-1] != "Stopped" {
		t.Fatalf("stopped: %q", s.Steps)
	}
}

// writes records what each write to the store held: the tasks' ids and
// statuses, in the order they were stored.
type writes struct {
	store.Store
	mu  sync.Mutex
	log [][]string
}

func (w *writes) record(ts ...task.Task) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var one []string
	for _, t := range ts {
		one = append(one, t.Title+" "+string(t.Status))
	}
	w.log = append(w.log, one)
}

func (w *writes) PutTask(t task.Task) error {
	err := w.Store.PutTask(t)
	if err == nil {
		w.record(t)
	}
	return err
}

func (w *writes) PutTasks(ts []task.Task) error {
	err := w.Store.PutTasks(ts)
	if err == nil {
		w.record(ts...)
	}
	return err
}

func (w *writes) since(n int) [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log[n:])
}

// A slot whose task ends goes straight to the next one waiting, and that
// one's start is stored with the end in one write: a queue of quick
// commands costs the store one write a task to run, not two.
func TestTheNextTaskStartsInTheWriteThatEndsTheLast(t *testing.T) {
	w := &writes{}
	b := setup(t, func(c *taskrun.Config) { w.Store = c.Store; c.Store = w })
	b.runner.SetLimits(pref.Limits{Background: 1, Helper: 1})
	release := filepath.Join(b.dir, "release")
	first := b.create(t, fmt.Sprintf("while [ ! -e %s ]; do sleep 0.01; done", release), task.Auto)
	b.waitFor(t, first.ID, "its start stored", func(tk task.Task) bool { return tk.Pid != 0 })
	ids := []string{first.ID}
	for _, cmd := range []string{"echo b", "echo c", "echo d"} {
		ids = append(ids, b.create(t, cmd, task.Auto).ID)
	}
	from := len(w.since(0))
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		b.waitStatus(t, id, task.Done)
	}
	long := first.Title
	want := [][]string{
		{long + " done", "echo b running"},
		{"echo b done", "echo c running"},
		{"echo c done", "echo d running"},
		{"echo d done"},
	}
	if got := w.since(from); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("writes after the first ended:\n got %q\nwant %q", got, want)
	}
	for _, id := range ids[1:] {
		if tk, _ := b.runner.Get(id); tk.Rev != 3 || tk.Steps[0] != "Started "+tk.Title {
			t.Fatalf("%s: rev %d, steps %q", tk.Title, tk.Rev, tk.Steps)
		}
	}
}

// A running task's growing log is announced (task.output) with its size,
// apart from the saves of outputBytes, and never stored as a change.
func TestGrowingOutputIsAnnounced(t *testing.T) {
	b := setup(t)
	sub := b.bus.Subscribe(4096)
	defer sub.Close()
	tk := b.create(t, "printf hello; sleep 1; printf ' world'; sleep 1", task.Auto)
	b.waitStatus(t, tk.ID, task.Done)
	var sizes []int64
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		if ev.Type == event.TaskOutput {
			if ev.ID != tk.ID || ev.Task != nil {
				t.Fatalf("announced %+v", ev)
			}
			sizes = append(sizes, ev.OutputBytes)
		}
	}
	if len(sizes) < 2 || sizes[0] != 5 || sizes[len(sizes)-1] != 11 {
		t.Fatalf("announced sizes %v, want 5 then 11", sizes)
	}
	for i := 1; i < len(sizes); i++ {
		if sizes[i] <= sizes[i-1] {
			t.Fatalf("announced %v: not growing", sizes)
		}
	}
	if got, _ := b.runner.Get(tk.ID); got.OutputBytes != 11 {
		t.Fatalf("stored outputBytes %d", got.OutputBytes)
	}
}
