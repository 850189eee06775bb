//go:build unix

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"conch/backend/conversation"
	"conch/backend/procmark"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/testrig/modelserver"
)

// The crash test: a real `conch serve` under every kind of work is killed
// with SIGKILL at random moments, again and again, on one home, and after
// each restart nothing it had said it stored is lost.
//
//	CONCH_CRASH_ROUNDS  how many kills (default crashRounds; `make crash` runs many)
//	CONCH_CRASH_SEED    the seed of the test's choices (default: the clock; printed)
//
// The seed fixes what the test does (which tasks, in which order, when it
// answers, when it kills); the scheduler's timing is not the seed's, so a
// replay lands its kills near, not exactly at, the same instants.

// crashRounds is how many kills `make test` makes: about a minute on two cores.
const crashRounds = 12

// shellLines is how many numbered lines a shell task prints.
const shellLines = 200

// shellCommand prints shellLines numbered lines slowly. The sleep in its
// own session prints nothing and outlives the loop: it is what healing must
// end after a kill (the loop itself dies of SIGPIPE at its next line once
// Conch is gone), and what a task that ends normally takes with it.
var shellCommand = fmt.Sprintf("setsid sleep 600 </dev/null >/dev/null 2>&1 & for i in $(seq 1 %d); do echo line-$i; sleep 0.01; done", shellLines)

// shellOutput is everything a shell task prints when it runs to the end.
var shellOutput = func() string {
	var b strings.Builder
	for i := 1; i <= shellLines; i++ {
		fmt.Fprintf(&b, "line-%d\n", i)
	}
	return b.String()
}()

func TestCrashesLoseNothing(t *testing.T) {
	rounds := crashRounds
	if v := os.Getenv("CONCH_CRASH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CONCH_CRASH_ROUNDS=%q: want a whole number, 1 or more", v)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CONCH_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CONCH_CRASH_SEED=%q: want a whole number", v)
		}
		seed = n
	}
	t.Logf("crash test: %d rounds; replay with CONCH_CRASH_SEED=%d CONCH_CRASH_ROUNDS=%d", rounds, seed, rounds)

	rig := newCrashRig(t, seed)
	for round := 1; round <= rounds; round++ {
		rig.round(round)
		if t.Failed() {
			t.Fatalf("round %d failed; replay with CONCH_CRASH_SEED=%d CONCH_CRASH_ROUNDS=%d", round, seed, rounds)
		}
	}
	rig.finish()
	if t.Failed() {
		t.Fatalf("replay with CONCH_CRASH_SEED=%d CONCH_CRASH_ROUNDS=%d", seed, rounds)
	}
	t.Logf("crash test: %s", rig.stats)
}

// crashRig is one home served, killed and served again, with what the
// test saw of it.
type crashRig struct {
	t     *testing.T
	rng   *rand.Rand
	seed  uint64
	home  string
	plain string // a folder for the chats that are not in git
	repo  string // a git repository for the helpers' worktrees
	mark  string // the home's process mark
	model *modelServer
	notes *notifyd
	s     *server
	saw   *sightings
	last  map[string]task.Task // the tasks the last kill left in the store
	// stats says how often each kind of moment was hit, for the log.
	stats crashStats
}

// crashStats count what the kills met, so a run that never met a kind of
// moment can say so.
type crashStats struct {
	kills, tasks, finishNotes int
	// statusAtKill counts, over every kill, the tasks the store held in
	// each status that the round had touched (made, or seen change).
	statusAtKill map[task.Status]int
	// resumed counts the resumed chat tasks by kind, withCalls those
	// that had made a tool call before the kill.
	resumed   map[task.Kind]int
	withCalls int
	// partialShell and wholeShell are the shell tasks whose log a kill
	// cut short, and those that ran to the end.
	partialShell, wholeShell map[string]bool
}

func (s crashStats) String() string {
	return fmt.Sprintf("%d kills over %d tasks; at the kills %v; chat tasks resumed %v (%d after a tool call); "+
		"%d shell logs cut short, %d whole; %d finish notifications",
		s.kills, s.tasks, s.statusAtKill, s.resumed, s.withCalls, len(s.partialShell), len(s.wholeShell), s.finishNotes)
}

func newCrashRig(t *testing.T, seed uint64) *crashRig {
	r := &crashRig{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 1)),
		home: t.TempDir(), plain: t.TempDir(), repo: gitRepo(t),
		saw: newSightings(),
		stats: crashStats{statusAtKill: map[task.Status]int{}, resumed: map[task.Kind]int{},
			partialShell: map[string]bool{}, wholeShell: map[string]bool{}},
	}
	r.model = startModel(t, seed)
	r.notes = startNotifyd(t)
	// The served process finds the notification server on this bus.
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", r.notes.addr)
	r.serve()
	r.mark = procmark.HomeMark(r.home, filepath.Join(r.home, "conch.db"))
	body := fmt.Sprintf(`{"kind":"openai","name":"Scripted","baseUrl":%q,"model":%q,"fastModel":%q}`, r.model.base, scriptedModel, scriptedModel)
	var p struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
	}
	if code := r.s.call(t, "PUT", "/api/providers/scripted", body, &p); code != 200 || !p.Ready {
		t.Fatalf("connect the scripted model: %d %+v", code, p)
	}
	t.Cleanup(r.cleanup)
	return r
}

// serve starts `conch serve` on the home and follows its events.
func (r *crashRig) serve() {
	r.s = start(r.t, r.home)
	r.saw.follow(r.s)
}

// round makes new work of every kind, lets it run a random while, kills
// Conch, checks the store it left, serves the home again, checks what the
// new Conch says, and resumes every chat task the kill interrupted.
func (r *crashRig) round(n int) {
	t := r.t
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	// Goroutines get their own generators, seeded from the test's, so the
	// seed still decides what they do.
	makeRng := rand.New(rand.NewPCG(r.seed, uint64(n)<<8|2))
	answerRng := rand.New(rand.NewPCG(r.seed, uint64(n)<<8|3))
	go func() { defer wg.Done(); r.makeWork(ctx, n, makeRng) }()
	go func() { defer wg.Done(); r.answerSome(ctx, answerRng) }()

	// The moment: now and then at once (the work still being made), else
	// anywhere in the first three seconds of a shell task's run.
	wait := time.Duration(150+r.rng.IntN(2850)) * time.Millisecond
	if r.rng.IntN(7) == 0 {
		wait = time.Duration(r.rng.IntN(150)) * time.Millisecond
	}
	time.Sleep(wait)
	r.s.kill9(t)
	cancel()
	wg.Wait()
	r.saw.wait() // every event the dead Conch sent is counted
	r.stats.kills++

	snap := r.snapshot()
	for id, tk := range snap.tasks {
		if last, ok := r.last[id]; !ok || last.Rev != tk.Rev {
			r.stats.statusAtKill[tk.Status]++
		}
	}
	r.checkSnapshot(n, snap)
	r.last = snap.tasks

	r.serve()
	r.checkNoStrays(n)
	after := r.checkTasks(n, snap)
	r.checkOutputs(n, snap, after)
	r.checkChats(n, snap)
	r.checkNotifications(n)
	if !t.Failed() {
		r.resumeInterrupted(n, after)
	}
}

// makeWork starts this round's work, in a random order: shell tasks, one of
// them asking first; a person's chat task in an auto chat and one in an ask
// chat (which asks before it writes); a background task the model starts;
// and a delegate of two helpers in worktrees of a git repository. It stops
// at the first request the dead Conch does not answer.
func (r *crashRig) makeWork(ctx context.Context, n int, rng *rand.Rand) {
	s := r.s
	chat := func(mode, cwd string) (string, bool) {
		var c conversation.Conversation
		body := fmt.Sprintf(`{"title":"crash %d","provider":"scripted","model":%q,"mode":%q,"cwd":%q}`, n, scriptedModel, mode, cwd)
		if code, err := s.try("POST", "/api/conversations", body, &c); err != nil || code != 201 {
			return "", false
		}
		return c.ID, true
	}
	newTask := func(body string) bool {
		var tk task.Task
		code, err := s.try("POST", "/api/tasks", body, &tk)
		if err == nil && code != 201 {
			r.t.Errorf("round %d: create a task: %d", n, code)
		}
		if err != nil || code != 201 {
			return false
		}
		r.saw.task(tk)
		return true
	}
	shell := func(mode string) func() bool {
		return func() bool {
			return newTask(fmt.Sprintf(`{"text":%q,"options":{"provider":"shell","mode":%q,"cwd":%q}}`, shellCommand, mode, r.plain))
		}
	}
	chatTask := func(mode, tag string) func() bool {
		return func() bool {
			id, ok := chat(mode, r.plain)
			return ok && newTask(fmt.Sprintf(`{"text":"Write the file and count. [%s]","conversationId":%q}`, tag, id))
		}
	}
	send := func(cwd, text string) func() bool {
		return func() bool {
			id, ok := chat("auto", cwd)
			if !ok {
				return false
			}
			code, err := s.try("POST", "/api/conversations/"+id+"/messages", fmt.Sprintf(`{"text":%q}`, text), nil)
			if err == nil && code != 202 {
				r.t.Errorf("round %d: send %q: %d", n, text, code)
			}
			return err == nil && code == 202
		}
	}
	steps := []func() bool{
		shell("auto"), shell("auto"), shell("ask"),
		chatTask("auto", fmt.Sprintf("crash-%d-auto", n)),
		chatTask("ask", fmt.Sprintf("crash-%d-ask", n)),
		send(r.plain, fmt.Sprintf("Do it in the background. [background crash-%d-bg]", n)),
		send(r.repo, fmt.Sprintf("Split it in two. [delegate crash-%d-d]", n)),
	}
	rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
	for _, step := range steps {
		if ctx.Err() != nil || !step() {
			return
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
	}
}

// answerSome answers about half the questions waiting now and then, so a
// kill finds tasks still asking, tasks just answered and tasks carrying on.
func (r *crashRig) answerSome(ctx context.Context, rng *rand.Rand) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(150+rng.IntN(550)) * time.Millisecond):
		}
		var list struct {
			Approvals []taskrun.Approval `json:"approvals"`
		}
		if code, err := r.s.try("GET", "/api/approvals", "", &list); err != nil || code != 200 {
			return
		}
		for _, a := range list.Approvals {
			if rng.IntN(2) == 0 {
				_, _ = r.s.try("POST", "/api/tasks/"+a.TaskID+"/answer", fmt.Sprintf(`{"askId":%q,"allow":true}`, a.Ask.ID), nil)
			}
		}
	}
}

// storeSnapshot is what the killed Conch left in its store.
type storeSnapshot struct {
	tasks map[string]task.Task
	chats map[string]conversation.Conversation
	msgs  map[string][]conversation.Message
}

// snapshot reads the store with no Conch running, as the next one will.
func (r *crashRig) snapshot() storeSnapshot {
	t := r.t
	st, err := store.OpenReadOnly(filepath.Join(r.home, "conch.db"))
	if err != nil {
		t.Fatalf("open the store the killed Conch left: %v", err)
	}
	defer st.Close()
	snap := storeSnapshot{tasks: map[string]task.Task{}, chats: map[string]conversation.Conversation{}, msgs: map[string][]conversation.Message{}}
	tasks, err := st.Tasks()
	if err != nil {
		t.Fatalf("read the tasks the killed Conch left: %v", err)
	}
	for _, tk := range tasks {
		snap.tasks[tk.ID] = tk
	}
	chats, err := st.Conversations()
	if err != nil {
		t.Fatalf("read the chats the killed Conch left: %v", err)
	}
	for _, c := range chats {
		snap.chats[c.ID] = c
		msgs, _, err := st.Messages(c.ID, 0, 1<<20)
		if err != nil {
			t.Fatalf("read the messages of chat %s: %v", c.ID, err)
		}
		snap.msgs[c.ID] = msgs
	}
	return snap
}

// checkSnapshot: everything the dead Conch showed (an answer, a list, an
// event) was in its store before it was shown, so the store holds it, at
// that rev or a later one.
func (r *crashRig) checkSnapshot(n int, snap storeSnapshot) {
	t := r.t
	r.saw.mu.Lock()
	defer r.saw.mu.Unlock()
	for id, seen := range r.saw.tasks {
		got, ok := snap.tasks[id]
		switch {
		case !ok:
			t.Errorf("round %d: task %s (%s, rev %d) was shown but is not in the store", n, id, seen.Status, seen.Rev)
		case got.Rev < seen.Rev:
			t.Errorf("round %d: task %s was shown at rev %d (%s), the store has rev %d (%s)", n, id, seen.Rev, seen.Status, got.Rev, got.Status)
		case got.Rev == seen.Rev && (got.Status != seen.Status || got.OutputBytes != seen.OutputBytes):
			t.Errorf("round %d: task %s at rev %d was shown %s with %d bytes, stored %s with %d", n, id, got.Rev, seen.Status, seen.OutputBytes, got.Status, got.OutputBytes)
		}
	}
	for id, rev := range r.saw.chatRevs {
		if got, ok := snap.chats[id]; !ok || got.Rev < rev {
			t.Errorf("round %d: chat %s was shown at rev %d, the store has %+v", n, id, rev, got)
		}
	}
	for id, seq := range r.saw.seqs {
		if got := snap.chats[id]; got.LastSeq < seq {
			t.Errorf("round %d: chat %s showed message %d, the store's last is %d", n, id, seq, got.LastSeq)
		}
	}
	for id := range snap.tasks {
		if _, ok := r.saw.tasks[id]; !ok {
			// Stored and killed before it was shown: known from now on.
			r.saw.tasks[id] = snap.tasks[id]
		}
	}
}

// checkNoStrays waits for every process of the killed Conch's tasks and
// chats to be gone. Healing ends what carries the home's mark; a process
// the new Conch started is its descendant, so anything else carrying the
// mark was left behind. The new Conch's own may be orphaned for a moment
// (a command's setsid'd child before its task ends it), so this waits.
func (r *crashRig) checkNoStrays(n int) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		strays := r.strays()
		if len(strays) == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("round %d: %d processes of the killed Conch still run after the restart: %s", n, len(strays), describe(strays))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// strays are the live processes with the home's mark that the serving
// Conch did not start.
func (r *crashRig) strays() []int {
	var out []int
	for _, pid := range procmark.Find(procmark.Mark{Home: r.mark}) {
		if !descends(pid, r.s.cmd.Process.Pid) {
			out = append(out, pid)
		}
	}
	return out
}

// descends reports whether pid is under ancestor; a process that is gone
// counts as under it (it is not left behind).
func descends(pid, ancestor int) bool {
	for pid > 1 {
		if pid == ancestor {
			return true
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 {
			return true
		}
		if pid, err = strconv.Atoi(f[1]); err != nil {
			return true
		}
	}
	return false
}

func describe(pids []int) string {
	var out []string
	for _, pid := range pids {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		var id string
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, procmark.EnvTask+"="); ok {
				id = v
			}
		}
		out = append(out, fmt.Sprintf("%d %q (task %s)", pid, strings.ReplaceAll(string(cmd), "\x00", " "), id))
	}
	return strings.Join(out, "; ")
}

// checkTasks compares the new Conch's list with the store the old one
// left: every task is there, none went back a rev, what was working is
// interrupted, what was queued is queued or running again, what had
// finished stays as it was.
func (r *crashRig) checkTasks(n int, snap storeSnapshot) map[string]task.Task {
	t := r.t
	after := r.list(n)
	r.saw.mu.Lock()
	known := len(r.saw.tasks)
	r.saw.mu.Unlock()
	if len(after) < known {
		t.Errorf("round %d: %d tasks were known before the kill, the new Conch lists %d", n, known, len(after))
	}
	r.stats.tasks = len(after)
	for id, was := range snap.tasks {
		now, ok := after[id]
		if !ok {
			t.Errorf("round %d: task %s (%s before the kill) is not listed after the restart", n, id, was.Status)
			continue
		}
		if now.Rev < was.Rev {
			t.Errorf("round %d: task %s went back from rev %d to %d", n, id, was.Rev, now.Rev)
		}
		switch was.Status {
		case task.Running, task.NeedsYou:
			if now.Status != task.Interrupted || now.Error != taskrun.InterruptedReason || now.Rev <= was.Rev || now.Ask != nil {
				t.Errorf("round %d: task %s was %s at the kill; after the restart %s %q rev %d→%d ask %v",
					n, id, was.Status, now.Status, now.Error, was.Rev, now.Rev, now.Ask)
			}
		case task.Queued:
			if !slices.Contains([]task.Status{task.Queued, task.Running, task.NeedsYou, task.Done}, now.Status) {
				t.Errorf("round %d: task %s was queued at the kill; after the restart %s %q", n, id, now.Status, now.Error)
			}
		default:
			if now.Status != was.Status {
				t.Errorf("round %d: task %s had finished %s; after the restart it is %s", n, id, was.Status, now.Status)
			}
		}
		if now.Status == task.Failed || now.Status == task.Stopped {
			t.Errorf("round %d: task %s is %s: %q (steps %q)", n, id, now.Status, now.Error, now.Steps)
		}
	}
	return after
}

// list is every task the serving Conch has, by id.
func (r *crashRig) list(n int) map[string]task.Task {
	out := map[string]task.Task{}
	// The overview, then the finished ones page by page: past the first
	// hundred finished, the overview alone no longer holds every task.
	for path := "/api/tasks"; path != ""; {
		var l struct {
			Tasks []task.Task `json:"tasks"`
			Next  string      `json:"next"`
		}
		if code := r.s.call(r.t, "GET", path, "", &l); code != 200 {
			r.t.Fatalf("round %d: list the tasks (%s): %d", n, path, code)
		}
		for _, tk := range l.Tasks {
			out[tk.ID] = tk
			r.saw.task(tk)
		}
		path = ""
		if l.Next != "" {
			path = "/api/tasks?group=finished&cursor=" + url.QueryEscape(l.Next)
		}
	}
	return out
}

// checkOutputs reads every task's log from the start. Its output went to
// the file with write(2) as it came, so a SIGKILL loses none of it (only
// a power cut could); outputBytes is the log's size as last flushed to the
// store (every 250 ms while a task runs, and at its end), so the log holds
// at least what the store said at the kill, and usually more: the lines
// printed after the last flush. Healing sets outputBytes from the file, so
// a finished task's record and log agree exactly. A shell task's log is
// the numbered lines from line-1 on, with none missing, none repeated and
// nothing else: at most the last line cut short, and all of them when it
// ran to the end.
func (r *crashRig) checkOutputs(n int, snap storeSnapshot, after map[string]task.Task) {
	t := r.t
	for id, now := range after {
		log, err := r.s.output(id)
		if err != nil {
			t.Errorf("round %d: read the output of task %s: %v", n, id, err)
			continue
		}
		if was, ok := snap.tasks[id]; ok && int64(len(log)) < was.OutputBytes {
			t.Errorf("round %d: task %s had stored %d bytes of output at the kill; its log now has %d", n, id, was.OutputBytes, len(log))
		}
		if now.Status.Finished() && now.OutputBytes != int64(len(log)) {
			t.Errorf("round %d: task %s (%s) says %d bytes of output, its log has %d", n, id, now.Status, now.OutputBytes, len(log))
		}
		if now.Provider != "shell" {
			continue
		}
		if !strings.HasPrefix(shellOutput, string(log)) {
			t.Errorf("round %d: task %s's log is not the numbered lines from the start:\n%s", n, id, clipLog(log, shellOutput))
		}
		switch {
		case now.Status == task.Done && string(log) != shellOutput:
			t.Errorf("round %d: task %s is done but its log has %d of %d bytes", n, id, len(log), len(shellOutput))
		case now.Status == task.Interrupted && len(log) > 0 && len(log) < len(shellOutput):
			r.stats.partialShell[id] = true
		case now.Status == task.Done:
			r.stats.wholeShell[id] = true
		}
	}
}

// clipLog shows where a log leaves the expected text.
func clipLog(log []byte, want string) string {
	i := 0
	for i < len(log) && i < len(want) && log[i] == want[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Sprintf("the first %d bytes agree; then %q instead of %q", i, log[from:min(len(log), i+40)], want[from:min(len(want), i+40)])
}

// checkChats: messages are append-only, so every message the store held at
// the kill is still there, the same, after the restart; healing only adds.
func (r *crashRig) checkChats(n int, snap storeSnapshot) {
	t := r.t
	for id, was := range snap.chats {
		var page struct {
			Conversation conversation.Conversation `json:"conversation"`
			Messages     []conversation.Message    `json:"messages"`
			More         bool                      `json:"more"`
		}
		if code := r.s.call(t, "GET", "/api/conversations/"+id+"?limit=500", "", &page); code != 200 {
			t.Errorf("round %d: chat %s is gone after the restart: %d", n, id, code)
			continue
		}
		if page.More {
			t.Fatalf("round %d: chat %s has over 500 messages; the test reads one page", n, id)
		}
		now := page.Conversation
		if now.Rev < was.Rev || now.LastSeq < was.LastSeq {
			t.Errorf("round %d: chat %s went back: rev %d→%d, last message %d→%d", n, id, was.Rev, now.Rev, was.LastSeq, now.LastSeq)
		}
		// A chat replying at the kill is healed: its turn ends with a notice.
		if was.Running && now.LastSeq <= was.LastSeq {
			t.Errorf("round %d: chat %s was replying at the kill and got no notice after the restart", n, id)
		}
		old := snap.msgs[id]
		if len(page.Messages) < len(old) {
			t.Errorf("round %d: chat %s had %d messages at the kill, %d after", n, id, len(old), len(page.Messages))
			continue
		}
		for i, m := range old {
			a, _ := json.Marshal(m)
			b, _ := json.Marshal(page.Messages[i])
			if !bytes.Equal(a, b) {
				t.Errorf("round %d: chat %s's message %d changed across the restart:\n%s\n%s", n, id, m.Seq, a, b)
				break
			}
		}
	}
}

// checkNotifications: Conch marks a finish notified in the store before it
// sends it, so one that reached the notification server is never sent
// again by a later Conch, and its task says so. (A kill between the mark
// and the send loses that one notification: once at most, never twice.)
func (r *crashRig) checkNotifications(n int) {
	t := r.t
	finishes := r.notes.finishes()
	after := r.list(n) // after the count: everything counted was marked first
	r.stats.finishNotes = len(finishes)
	for tag, count := range finishes {
		id := strings.TrimPrefix(tag, "task-")
		if count > 1 {
			t.Errorf("round %d: the finish of task %s was notified %d times", n, id, count)
		}
		if tk, ok := after[id]; !ok || !tk.Notified {
			t.Errorf("round %d: task %s's finish was notified but the task says notified=%v (%s)", n, id, tk.Notified, tk.Status)
		}
	}
}

// earlier is what a task's chat held before it resumed.
type earlier struct {
	task  task.Task
	calls []conversation.ToolCall
}

// resumeInterrupted resumes every chat task the kill interrupted,
// answers what they ask again, and checks that each ends done, its model
// given the transcript it had: its text once, every tool call it made
// before, and the notice to carry on.
func (r *crashRig) resumeInterrupted(n int, after map[string]task.Task) {
	t := r.t
	var resumed []earlier
	for id, tk := range after {
		if tk.Status != task.Interrupted || tk.ConversationID == "" {
			continue
		}
		var page struct {
			Messages []conversation.Message `json:"messages"`
		}
		if code := r.s.call(t, "GET", "/api/conversations/"+tk.ConversationID+"?limit=500", "", &page); code != 200 {
			t.Fatalf("round %d: read task %s's chat: %d", n, id, code)
		}
		e := earlier{task: tk}
		for _, m := range page.Messages {
			if m.Kind == conversation.ToolCallKind {
				e.calls = append(e.calls, *m.ToolCall)
			}
		}
		var got task.Task
		if code := r.s.call(t, "POST", "/api/tasks/"+id+"/resume", "", &got); code != 200 || got.Status != task.Queued || got.Rev <= tk.Rev {
			t.Fatalf("round %d: resume task %s: %d %s rev %d→%d", n, id, code, got.Status, tk.Rev, got.Rev)
		}
		r.saw.task(got)
		resumed = append(resumed, e)
	}
	if len(resumed) == 0 {
		return
	}
	pending := map[string]bool{}
	for _, e := range resumed {
		pending[e.task.ID] = true
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("round %d: %d resumed tasks did not finish within 60 s: %v", n, len(pending), pending)
		}
		time.Sleep(50 * time.Millisecond)
		all := r.list(n)
		for id := range pending {
			tk := all[id]
			switch {
			case tk.Status == task.NeedsYou && tk.Ask != nil:
				_, _ = r.s.try("POST", "/api/tasks/"+id+"/answer", fmt.Sprintf(`{"askId":%q,"allow":true}`, tk.Ask.ID), nil)
			case tk.Status == task.Done:
				delete(pending, id)
			case tk.Status.Finished():
				t.Fatalf("round %d: resumed task %s ended %s: %q (steps %q)", n, id, tk.Status, tk.Error, tk.Steps)
			}
		}
	}
	done := r.list(n)
	for _, e := range resumed {
		r.checkResumed(n, e, done[e.task.ID])
	}
}

// checkResumed checks the model's last request for a resumed task, and a
// helper's worktree.
func (r *crashRig) checkResumed(n int, e earlier, now task.Task) {
	t := r.t
	r.stats.resumed[e.task.Kind]++
	mm := markerRe.FindStringSubmatch(e.task.Text)
	if mm == nil {
		t.Fatalf("round %d: task %s's text has no marker: %q", n, e.task.ID, e.task.Text)
	}
	mk := mm[1]
	if now.Result == nil || now.Result.Text != mk+" is done." {
		t.Errorf("round %d: resumed task %s ended with %+v", n, e.task.ID, now.Result)
	}
	req, ok := r.model.last(mk)
	if !ok {
		t.Errorf("round %d: the model never heard of resumed task %s (%s)", n, e.task.ID, mk)
		return
	}
	var texts, notices int
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		if strings.Contains(m.Text, "["+mk+"]") {
			texts++
		}
		if strings.Contains(m.Text, "Conch stopped while this was running") && strings.Contains(m.Text, "Carry on from where it stopped") {
			notices++
		}
	}
	if texts != 1 || notices < 1 {
		t.Errorf("round %d: resumed task %s's last request holds its text %d times and the carry-on notice %d times:\n%s",
			n, e.task.ID, texts, notices, req.transcript())
	}
	sent := req.calls()
	for _, c := range e.calls {
		if !slices.ContainsFunc(sent, func(w modelserver.Call) bool { return w.ID == c.ID && w.Name == c.Name }) {
			t.Errorf("round %d: resumed task %s's last request lacks its earlier call %s %s:\n%s", n, e.task.ID, c.Name, c.ID, req.transcript())
		}
	}
	if len(e.calls) > 0 {
		r.stats.withCalls++
	}
	if now.Kind == task.Helper {
		w := now.Worktree
		if w == nil || !w.Kept || !strings.HasPrefix(w.Path, filepath.Join(r.home, "worktrees")) {
			t.Errorf("round %d: resumed helper %s's worktree: %+v", n, now.ID, w)
			return
		}
		if b, err := os.ReadFile(filepath.Join(w.Path, mk+".txt")); err != nil || string(b) != mk+"\n" {
			t.Errorf("round %d: resumed helper %s's file in its worktree: %q %v", n, now.ID, b, err)
		}
	}
}

// finish lets everything left run to its end, answering every question,
// then checks that nothing waits for ever, and that Conch's own exit
// leaves no process of this home behind.
func (r *crashRig) finish() {
	t := r.t
	deadline := time.Now().Add(90 * time.Second)
	for {
		all := r.list(0)
		busy := 0
		for id, tk := range all {
			switch {
			case tk.Status == task.NeedsYou && tk.Ask != nil:
				_, _ = r.s.try("POST", "/api/tasks/"+id+"/answer", fmt.Sprintf(`{"askId":%q,"allow":true}`, tk.Ask.ID), nil)
				busy++
			case tk.Status.Finished():
			default:
				busy++
			}
		}
		if busy == 0 {
			for id, tk := range all {
				ok := tk.Status == task.Done || (tk.Status == task.Interrupted && tk.Provider == "shell")
				if !ok {
					t.Errorf("at the end: task %s (%s) is %s: %q", id, tk.Provider, tk.Status, tk.Error)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("at the end: %d tasks are still queued, running or asking after 90 s", busy)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.checkNotifications(0)
	// With many rounds every kind of moment comes up; a run that never
	// met one would prove nothing about it.
	if r.stats.kills >= 8 {
		if r.stats.withCalls == 0 || len(r.stats.partialShell) == 0 || r.stats.finishNotes == 0 || r.stats.resumed[task.Helper] == 0 {
			t.Errorf("the kills never hit a chat task after a tool call, a helper, a shell task mid-output, or a notified finish: %s", r.stats)
		}
	}
	_ = r.s.cmd.Process.Signal(os.Interrupt)
	_, _ = r.s.cmd.Process.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for left := procmark.Find(procmark.Mark{Home: r.mark}); len(left) > 0; left = procmark.Find(procmark.Mark{Home: r.mark}) {
		if time.Now().After(deadline) {
			t.Errorf("after Conch's exit %d processes of its home still run: %s", len(left), describe(left))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cleanup ends whatever the test left: a Conch still serving, and any
// process of the home (after a failure); the folders go with t.TempDir.
func (r *crashRig) cleanup() {
	if r.s != nil {
		r.s.kill9(r.t)
	}
	if r.mark != "" {
		procmark.Signal(procmark.Mark{Home: r.mark}, 9)
	}
	// git's record of the helpers' worktrees lives in the repository,
	// which goes too; nothing outside the temporary folders is left.
}

// sightings is the newest of everything the live Conch showed: the
// answers to the test's requests, its lists and its event stream.
type sightings struct {
	mu       sync.Mutex
	tasks    map[string]task.Task // the highest rev seen
	chatRevs map[string]int64
	seqs     map[string]uint64
	done     chan struct{} // closed when the event stream of the server followed ends
}

func newSightings() *sightings {
	return &sightings{tasks: map[string]task.Task{}, chatRevs: map[string]int64{}, seqs: map[string]uint64{}}
}

func (s *sightings) task(tk task.Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tk.ID != "" && tk.Rev >= s.tasks[tk.ID].Rev {
		s.tasks[tk.ID] = tk
	}
}

// follow reads the server's event stream until the server goes, picking
// the stream up again if it is dropped for falling behind.
func (s *sightings) follow(srv *server) {
	done := make(chan struct{})
	s.done = done
	go func() {
		defer close(done)
		url := "ws" + strings.TrimPrefix(srv.base, "http") + "/api/events"
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
				HTTPHeader: http.Header{"Authorization": []string{"Bearer " + srv.token}},
			})
			cancel()
			if err != nil {
				return // the server is gone
			}
			c.SetReadLimit(8 << 20)
			for {
				_, b, err := c.Read(context.Background())
				if err != nil {
					break
				}
				var ev struct {
					Type         string                     `json:"type"`
					Task         *task.Task                 `json:"task"`
					Conversation *conversation.Conversation `json:"conversation"`
					Message      *conversation.Message      `json:"message"`
				}
				if json.Unmarshal(b, &ev) != nil {
					continue
				}
				s.event(ev.Task, ev.Conversation, ev.Message)
			}
			c.CloseNow()
		}
	}()
}

func (s *sightings) event(tk *task.Task, c *conversation.Conversation, m *conversation.Message) {
	if tk != nil {
		s.task(*tk)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c != nil && c.Rev > s.chatRevs[c.ID] {
		s.chatRevs[c.ID] = c.Rev
	}
	if m != nil && m.Seq > s.seqs[m.ConversationID] {
		s.seqs[m.ConversationID] = m.Seq
	}
}

// wait returns once the stream of the server followed has ended.
func (s *sightings) wait() {
	if s.done != nil {
		<-s.done
	}
}

// crashClient has a timeout: a request to a Conch being killed fails
// rather than hangs.
var crashClient = &http.Client{Timeout: 15 * time.Second}

// try is call for goroutines and for a server that may be dead: it
// returns the error instead of failing the test.
func (s *server) try(method, path, body string, out any) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := crashClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w in %s", method, path, err, b)
		}
	}
	return resp.StatusCode, nil
}

// output reads a task's whole log through the API, page by page.
func (s *server) output(id string) ([]byte, error) {
	var all []byte
	for {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/tasks/%s/output?offset=%d", s.base, id, len(all)), nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := crashClient.Do(req)
		if err != nil {
			return all, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return all, err
		}
		if resp.StatusCode != 200 {
			return all, fmt.Errorf("GET output: %d %s", resp.StatusCode, b)
		}
		next, err := strconv.Atoi(resp.Header.Get("X-Next-Offset"))
		if err != nil || next != len(all)+len(b) {
			return all, fmt.Errorf("GET output at %d: %d bytes and X-Next-Offset %q", len(all), len(b), resp.Header.Get("X-Next-Offset"))
		}
		if len(b) == 0 {
			return all, nil
		}
		all = append(all, b...)
	}
}
