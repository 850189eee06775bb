//go:build unix

package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/conversation"
	"conch/backend/task"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/chatcompletions"
)

// A resumed task never runs a command again on its own (SPEC §3 Resume):
// these tests kill a real `conch serve` while a chat task's command runs,
// start it again on the same home and resume the task.

// slowCommand counts its runs in runs.txt, prints a line, then takes far
// longer than any test waits: run again, it would hold the task up.
const slowCommand = "echo ran >> runs.txt; echo partial-out-17; sleep 30"

// resumeRig is a home served by conch, a chat in dir, and a scripted model
// whose brain sees each request of the task's chat.
type resumeRig struct {
	t     *testing.T
	home  string
	dir   string
	model *chatcompletions.Server
	s     *server
	chat  conversation.Conversation

	mu   sync.Mutex
	seen []cutSeen // what the model was sent after each cut-off result
}

// cutSeen is one request that carried a cut-off command's result: the
// result's text, and how many times the command had run when it came.
type cutSeen struct {
	result string
	runs   int
}

// newResumeRig serves a fresh home with the scripted model connected and a
// chat in mode; brain answers the task's requests (the parent chat's get
// a plain reply).
func newResumeRig(t *testing.T, mode task.Mode, brain func(r *resumeRig, turn modelserver.Turn) modelserver.Reply) *resumeRig {
	r := &resumeRig{t: t, home: t.TempDir(), dir: t.TempDir()}
	r.model = chatcompletions.New(t, func(turn modelserver.Turn) modelserver.Reply {
		if !(request{turn}).task() {
			return modelserver.Reply{Text: "Noted."}
		}
		return brain(r, turn)
	}, chatcompletions.Models(scriptedModel))
	r.s = start(t, r.home)
	body := fmt.Sprintf(`{"kind":"openai","name":"Scripted","baseUrl":%q,"model":%q}`, r.model.BaseURL(), scriptedModel)
	if code := r.s.call(t, "PUT", "/api/providers/scripted", body, nil); code != 200 {
		t.Fatalf("connect the scripted model: %d", code)
	}
	if code := r.s.call(t, "POST", "/api/conversations", fmt.Sprintf(`{"provider":"scripted","mode":%q,"cwd":%q}`, mode, r.dir), &r.chat); code != 201 {
		t.Fatalf("make a chat: %d", code)
	}
	return r
}

// send sends text away from the chat as a task.
func (r *resumeRig) send(text string) task.Task {
	var tk task.Task
	if code := r.s.call(r.t, "POST", "/api/tasks", fmt.Sprintf(`{"text":%q,"conversationId":%q}`, text, r.chat.ID), &tk); code != 201 {
		r.t.Fatalf("send the task away: %d", code)
	}
	return tk
}

// runs is how many times slowCommand has run.
func (r *resumeRig) runs() int {
	b, err := os.ReadFile(filepath.Join(r.dir, "runs.txt"))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("ran\n"))
}

// lastResult is the newest tool result of turn, if any.
func lastResult(turn modelserver.Turn) (modelserver.Message, bool) {
	res := turn.Results()
	if len(res) == 0 {
		return modelserver.Message{}, false
	}
	return res[len(res)-1], true
}

// sawCut records a request whose newest result is a cut-off command's.
func (r *resumeRig) sawCut(turn modelserver.Turn) bool {
	m, ok := lastResult(turn)
	if !ok || !strings.Contains(m.Text, cutOff) {
		return false
	}
	r.mu.Lock()
	r.seen = append(r.seen, cutSeen{result: m.Text, runs: r.runs()})
	r.mu.Unlock()
	return true
}

// killWhileItRuns waits until the task's command has printed its line,
// kills conch with SIGKILL, serves the home again, and checks the task
// came back interrupted.
func (r *resumeRig) killWhileItRuns(id string) {
	t := r.t
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := r.s.output(id)
		if bytes.Contains(out, []byte("partial-out-17\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never printed; the log holds %q", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.restart(id)
}

// restart kills conch with SIGKILL and serves the home again; the task
// must come back interrupted.
func (r *resumeRig) restart(id string) {
	r.s.kill9(r.t)
	r.s = start(r.t, r.home)
	if got := r.s.waitTask(r.t, id, func(task.Task) bool { return true }); got.Status != task.Interrupted {
		r.t.Fatalf("after the restart: %s %q", got.Status, got.Error)
	}
}

func (r *resumeRig) resume(id string) {
	if code := r.s.call(r.t, "POST", "/api/tasks/"+id+"/resume", "", nil); code != 200 {
		r.t.Fatalf("resume: %d", code)
	}
}

// cuts is what the model was sent after cut-off results, so far.
func (r *resumeRig) cuts() []cutSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cutSeen(nil), r.seen...)
}

// checkCut checks the model heard of the cut-off command once, with what
// it had printed, before the command ran a second time.
func (r *resumeRig) checkCut() {
	t := r.t
	seen := r.cuts()
	if len(seen) != 1 {
		t.Fatalf("the model heard of the cut-off command %d times", len(seen))
	}
	if !strings.Contains(seen[0].result, "partial-out-17") {
		t.Errorf("the cut-off result lacks the command's output so far: %q", seen[0].result)
	}
	if seen[0].runs != 1 {
		t.Errorf("the command had run %d times when the model heard of it, want 1", seen[0].runs)
	}
}

// Auto mode: the command Conch was killed in is not run again; the model
// hears at once that it was cut off, with what it had printed, and
// carries on (here: it reports).
func TestResumeNeverRunsACutOffCommandAgain(t *testing.T) {
	r := newResumeRig(t, task.Auto, func(r *resumeRig, turn modelserver.Turn) modelserver.Reply {
		if r.sawCut(turn) {
			return toolCall("report_result", map[string]string{"summary": "It was cut off; left as it is."})
		}
		if _, ok := lastResult(turn); !ok {
			return toolCall("run_command", map[string]string{"command": slowCommand})
		}
		return toolCall("report_result", map[string]string{"summary": "unexpected"})
	})
	tk := r.send("Run the slow command.")
	r.killWhileItRuns(tk.ID)
	r.resume(tk.ID)
	done := r.s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status.Finished() })
	if done.Status != task.Done || done.Result == nil || done.Result.Text != "It was cut off; left as it is." {
		t.Fatalf("after the resume: %s %q %+v", done.Status, done.Error, done.Result)
	}
	r.checkCut()
	if n := r.runs(); n != 1 {
		t.Errorf("the command ran %d times, want 1", n)
	}
}

// Ask mode: a question pending at the kill is asked again (its command
// never ran, and the model is not asked first); allowed, the command runs
// and Conch is killed in it; resumed, the model hears it was cut off and
// calls it again, which asks before it runs.
func TestResumeAsksAgainAndLeavesTheModelToRerun(t *testing.T) {
	r := newResumeRig(t, task.Ask, func(r *resumeRig, turn modelserver.Turn) modelserver.Reply {
		last, ok := lastResult(turn)
		switch {
		case r.sawCut(turn), !ok:
			return toolCall("run_command", map[string]string{"command": slowCommand})
		case strings.Contains(last.Text, "declined"):
			return toolCall("report_result", map[string]string{"summary": "Not run again: the person said no."})
		}
		return toolCall("report_result", map[string]string{"summary": "unexpected: " + last.Text})
	})
	tk := r.send("Run the slow command.")
	asking := r.s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status == task.NeedsYou && t.Ask != nil })
	asked := len(r.model.Turns())
	r.restart(tk.ID)
	r.resume(tk.ID)
	again := r.s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status == task.NeedsYou && t.Ask != nil })
	if !strings.Contains(again.Ask.Detail, slowCommand) || again.Ask.ID == asking.Ask.ID {
		t.Fatalf("asked again: %+v (first %+v)", again.Ask, asking.Ask)
	}
	if n := len(r.model.Turns()); n != asked || r.runs() != 0 {
		t.Fatalf("before the answer: the model was asked %d more times and the command ran %d times", n-asked, r.runs())
	}
	if code := r.s.call(t, "POST", "/api/tasks/"+tk.ID+"/answer", fmt.Sprintf(`{"askId":%q,"allow":true}`, again.Ask.ID), nil); code != 200 {
		t.Fatalf("allow: %d", code)
	}
	r.killWhileItRuns(tk.ID)
	r.resume(tk.ID)
	rerun := r.s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status == task.NeedsYou && t.Ask != nil })
	if !strings.Contains(rerun.Ask.Detail, slowCommand) {
		t.Fatalf("the model's call again asks %+v", rerun.Ask)
	}
	r.checkCut()
	if n := r.runs(); n != 1 {
		t.Fatalf("the command ran %d times before the question was answered, want 1", n)
	}
	if code := r.s.call(t, "POST", "/api/tasks/"+tk.ID+"/answer", fmt.Sprintf(`{"askId":%q,"allow":false}`, rerun.Ask.ID), nil); code != 200 {
		t.Fatalf("deny: %d", code)
	}
	done := r.s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status.Finished() })
	if done.Status != task.Done || done.Result == nil || !strings.HasPrefix(done.Result.Text, "Not run again") {
		t.Fatalf("after the answer: %s %q %+v", done.Status, done.Error, done.Result)
	}
	if n := r.runs(); n != 1 {
		t.Errorf("the command ran %d times, want 1", n)
	}
}
