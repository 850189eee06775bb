package handoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/handoff"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// carriesOn is the words of a resumed task's notice the model must see.
const carriesOn = "Carry on from where it stopped"

// transcript is a request's messages as one text.
func (a asked) transcript() string {
	b, _ := json.Marshal(a.Messages)
	return string(b)
}

// A task that failed part-way resumes: its model gets the whole transcript
// (the task's text, its earlier tool call and result) and a notice of what
// happened, then finishes; its steps carry on.
func TestResumeCarriesOnWithTheWholeTranscript(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			return handsOff(handoff.BackgroundTool, map[string]string{"text": "count the files", "title": "Count"})(context.Background(), a)
		}
		switch {
		case strings.Contains(a.transcript(), carriesOn):
			return callTool("report_result", map[string]string{"summary": "Carried on: 1 file."})
		case len(a.Results()) == 0:
			return callTool("list_files", map[string]string{"path": "."})
		case broken.Load():
			return answer{Status: 500, Body: `{"error":{"message":"the model fell over","type":"server_error"}}`}
		}
		return say("unreachable")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	ch := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(ch.ID, "count them in the background"); err != nil {
		t.Fatal(err)
	}
	tk := e.onlyTask(t, ch.ID)
	if tk.Status != task.Failed || len(tk.Steps) == 0 {
		t.Fatalf("first run: %s %q steps %q", tk.Status, tk.Error, tk.Steps)
	}
	steps, rev := tk.Steps, tk.Rev
	resumed, err := e.svc.ResumeTask(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Status != task.Queued || resumed.Resume == nil || resumed.Resume.From != task.Failed || resumed.Rev <= rev {
		t.Fatalf("resumed: %+v", resumed)
	}
	tk = e.waitDone(t, tk.ID)
	if tk.Status != task.Done || tk.Result == nil || tk.Result.Text != "Carried on: 1 file." {
		t.Fatalf("after resume: %s %q %+v", tk.Status, tk.Error, tk.Result)
	}
	if len(tk.Steps) <= len(steps) || tk.Steps[0] != steps[0] {
		t.Errorf("steps did not carry on: before %q, after %q", steps, tk.Steps)
	}
	// The task's last request: the chat it came from is woken by the
	// first failure and may ask the same server after it.
	var last asked
	for _, a := range srv.requests() {
		if a.Task() {
			last = a
		}
	}
	seen := last.transcript()
	for _, want := range []string{"count the files", "list_files", "This task failed", "the last step was: " + steps[len(steps)-1]} {
		if !strings.Contains(seen, want) {
			t.Errorf("the resumed request lacks %q:\n%s", want, seen)
		}
	}
	if n := strings.Count(seen, "count the files"); n != 1 {
		t.Errorf("the task's text was sent %d times", n)
	}
}

// Try again starts from the beginning: the earlier try stays in the chat
// but its model does not see it.
func TestRetryStartsAFreshConversation(t *testing.T) {
	var tries atomic.Int32
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			return handsOff(handoff.BackgroundTool, map[string]string{"text": "count the files", "title": "Count"})(context.Background(), a)
		}
		if len(a.Results()) == 0 {
			return callTool("list_files", map[string]string{"path": "."})
		}
		if tries.Add(1) == 1 {
			return answer{Status: 500, Body: `{"error":{"message":"the model fell over","type":"server_error"}}`}
		}
		return callTool("report_result", map[string]string{"summary": "Counted."})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	ch := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(ch.ID, "count them in the background"); err != nil {
		t.Fatal(err)
	}
	tk := e.onlyTask(t, ch.ID)
	if tk.Status != task.Failed {
		t.Fatalf("first run: %s", tk.Status)
	}
	before := len(srv.requests())
	if _, err := e.svc.RetryTask(tk.ID); err != nil {
		t.Fatal(err)
	}
	tk = e.waitDone(t, tk.ID)
	if tk.Status != task.Done || tk.Resume != nil {
		t.Fatalf("after retry: %s %q resume %+v", tk.Status, tk.Error, tk.Resume)
	}
	var first asked
	for _, a := range srv.requests()[before:] {
		if a.Task() {
			first = a
			break
		}
	}
	if len(first.Messages) != 1 || first.Messages[0].Text != "count the files" {
		t.Errorf("the retried task's first request holds the earlier try: %s", first.transcript())
	}
	var notices int
	for _, m := range e.messages(t, tk.ConversationID) {
		if m.Kind == conversation.Notice && strings.HasPrefix(m.Text, "Tried again from the start") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d fresh-start notices in the task's chat", notices)
	}
}

// A question that was pending when Conch stopped is asked again when the
// task resumes; answered, the task finishes.
func TestResumeAsksThePendingQuestionAgain(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if strings.Contains(a.transcript(), carriesOn) {
			return callTool("report_result", map[string]string{"summary": "It ran: " + strings.Join(a.Results(), " ")})
		}
		return say("the model was not asked before the question")
	})
	now := time.Now().UTC()
	const id = "6c1f7f0e-2b6a-4d3e-8a59-7c2d9e1b4a10"
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}}, func(e *env) {
		parent := conversation.Conversation{ID: "parent", Title: "Mine", Origin: conversation.Origin{Kind: conversation.FromChat},
			Provider: "main", Mode: task.Ask, Cwd: e.dir, CreatedAt: now, UpdatedAt: now, Rev: 1}
		q := ask.New("q-1", "call-1", "run_command", "Run `echo asked-again`", now, time.Hour)
		own := conversation.Conversation{ID: "own", Title: "Echo", Origin: conversation.Origin{Kind: conversation.FromTask, TaskID: id, ParentID: "parent"},
			Provider: "main", Mode: task.Ask, Cwd: e.dir, Running: true, Ask: &q, LastSeq: 3, CreatedAt: now, UpdatedAt: now, Rev: 3}
		msgs := []conversation.Message{
			{ID: "m1", ConversationID: "own", Seq: 1, Kind: conversation.User, Text: "echo it", CreatedAt: now},
			{ID: "m2", ConversationID: "own", Seq: 2, Kind: conversation.ToolCallKind, CreatedAt: now,
				ToolCall: &conversation.ToolCall{ID: "call-1", Name: "run_command", Arguments: json.RawMessage(`{"command":"echo asked-again"}`)}},
			{ID: "m3", ConversationID: "own", Seq: 3, Kind: conversation.AskKind, Ask: &q, CreatedAt: now},
		}
		if err := e.st.PutConversation(parent); err != nil {
			t.Fatal(err)
		}
		if err := e.st.PutConversation(own, msgs...); err != nil {
			t.Fatal(err)
		}
		started := now
		if err := e.st.PutTask(task.Task{ID: id, Kind: task.Background, Status: task.NeedsYou, Title: "Echo", Text: "echo it",
			ConversationID: "own", ParentConversationID: "parent", Provider: "main", Mode: task.Ask, Cwd: e.dir,
			Steps: []string{"Asked to run echo asked-again"}, Ask: &q, Wake: task.WakeNone, CreatedAt: now, StartedAt: &started, Rev: 7}); err != nil {
			t.Fatal(err)
		}
	})
	healed, err := e.tasks.Get(id)
	if err != nil || healed.Status != task.Interrupted {
		t.Fatalf("healed: %+v %v", healed, err)
	}
	if _, err := e.svc.ResumeTask(id); err != nil {
		t.Fatal(err)
	}
	var asking task.Task
	eventually(t, "the question asked again", func() bool {
		asking, _ = e.tasks.Get(id)
		return asking.Status == task.NeedsYou && asking.Ask != nil
	})
	if asking.Ask.Detail == "" || !strings.Contains(asking.Ask.Detail, "echo asked-again") {
		t.Fatalf("asked %+v", asking.Ask)
	}
	if len(srv.requests()) != 0 {
		t.Errorf("the model was asked before the question was answered")
	}
	if _, err := e.svc.AnswerTask(id, asking.Ask.ID, true); err != nil {
		t.Fatal(err)
	}
	done := e.waitDone(t, id)
	if done.Status != task.Done || !strings.Contains(done.Result.Text, "asked-again") {
		t.Fatalf("after the answer: %s %q %+v", done.Status, done.Error, done.Result)
	}
}

// waitDone waits for the task to finish.
func (e *env) waitDone(t *testing.T, id string) task.Task {
	t.Helper()
	var tk task.Task
	eventually(t, "task "+id+" to finish", func() bool {
		tk, _ = e.tasks.Get(id)
		return tk.Status.Finished()
	})
	return tk
}

// Resume from many clients at once takes effect once: one call queues the
// task, every other is refused with a conflict, and it runs once.
func TestResumeFromManyClientsAtOnce(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	var resumed atomic.Int32
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			return handsOff(handoff.BackgroundTool, map[string]string{"text": "count the files", "title": "Count"})(context.Background(), a)
		}
		if strings.Contains(a.transcript(), carriesOn) {
			resumed.Add(1)
			return callTool("report_result", map[string]string{"summary": "Carried on."})
		}
		if broken.Load() {
			return answer{Status: 500, Body: `{"error":{"message":"the model fell over","type":"server_error"}}`}
		}
		return say("unreachable")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	ch := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(ch.ID, "count them in the background"); err != nil {
		t.Fatal(err)
	}
	tk := e.onlyTask(t, ch.ID)
	if tk.Status != task.Failed {
		t.Fatalf("first run: %s", tk.Status)
	}
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.ResumeTask(tk.ID)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, taskrun.ErrConflict) || errors.Is(err, task.ErrInvalidTransition):
				refused.Add(1)
			default:
				t.Errorf("resume: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != 7 {
		t.Fatalf("%d resumes took effect, %d were refused", ok.Load(), refused.Load())
	}
	if done := e.waitDone(t, tk.ID); done.Status != task.Done || resumed.Load() != 1 {
		t.Fatalf("after the resumes: %s, its model carried on %d times", done.Status, resumed.Load())
	}
}

// Conch stopped while the first of two calls ran (the store as a kill
// leaves it: both calls without results, the first one's output in the
// task's log). Resumed, neither runs: the first's result says it was cut
// off, with what it had printed; the second never began. The model
// hears of both at once and decides.
func TestResumeRunsNoCallThatWasCutOff(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if strings.Contains(a.transcript(), carriesOn) {
			return callTool("report_result", map[string]string{"summary": strings.Join(a.Results(), " | ")})
		}
		return say("the model was asked before the resume")
	})
	now := time.Now().UTC()
	const id = "0b8d2c4e-6f1a-4b3c-9d5e-2a7f8c1e3b90"
	var dir string
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}}, func(e *env) {
		dir = e.dir
		parent := conversation.Conversation{ID: "parent", Title: "Mine", Origin: conversation.Origin{Kind: conversation.FromChat},
			Provider: "main", Mode: task.Auto, Cwd: e.dir, CreatedAt: now, UpdatedAt: now, Rev: 1}
		own := conversation.Conversation{ID: "own", Title: "Two", Origin: conversation.Origin{Kind: conversation.FromTask, TaskID: id, ParentID: "parent"},
			Provider: "main", Mode: task.Auto, Cwd: e.dir, Running: true, LastSeq: 3, CreatedAt: now, UpdatedAt: now, Rev: 3}
		call := func(seq uint64, callID, command string) conversation.Message {
			return conversation.Message{ID: fmt.Sprintf("m%d", seq), ConversationID: "own", Seq: seq, Kind: conversation.ToolCallKind, CreatedAt: now,
				ToolCall: &conversation.ToolCall{ID: callID, Name: "run_command", Arguments: json.RawMessage(fmt.Sprintf(`{"command":%q}`, command))}}
		}
		msgs := []conversation.Message{
			{ID: "m1", ConversationID: "own", Seq: 1, Kind: conversation.User, Text: "run both", CreatedAt: now},
			call(2, "call-1", "echo first >> runs.txt; echo printed-so-far; sleep 30"),
			call(3, "call-2", "echo second >> runs.txt"),
		}
		if err := e.st.PutConversation(parent); err != nil {
			t.Fatal(err)
		}
		if err := e.st.PutConversation(own, msgs...); err != nil {
			t.Fatal(err)
		}
		started := now
		if err := e.st.PutTask(task.Task{ID: id, Kind: task.Background, Status: task.Running, Title: "Two", Text: "run both",
			ConversationID: "own", ParentConversationID: "parent", Provider: "main", Mode: task.Auto, Cwd: e.dir,
			Steps: []string{"Running echo first"}, Wake: task.WakeNone, CreatedAt: now, StartedAt: &started, Rev: 5}); err != nil {
			t.Fatal(err)
		}
		logDir := filepath.Join(e.home, "tasks", id)
		if err := os.MkdirAll(logDir, 0o700); err != nil {
			t.Fatal(err)
		}
		log := "\n$ echo earlier\nearlier-output\n\n$ echo first >> runs.txt; echo printed-so-far; sleep 30\nprinted-so-far\n"
		if err := os.WriteFile(filepath.Join(logDir, "output.log"), []byte(log), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := e.svc.ResumeTask(id); err != nil {
		t.Fatal(err)
	}
	done := e.waitDone(t, id)
	if done.Status != task.Done || done.Result == nil {
		t.Fatalf("after the resume: %s %q %+v", done.Status, done.Error, done.Result)
	}
	want := "Conch stopped while this ran; it may have partly run. Its output so far:\nprinted-so-far | Error: Stopped before it ran."
	if !strings.Contains(done.Result.Text, want) || strings.Contains(done.Result.Text, "earlier-output") {
		t.Errorf("the model was told %q, want %q", done.Result.Text, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "runs.txt")); err == nil {
		t.Errorf("a call ran again on its own: runs.txt holds %q", b)
	}
}
