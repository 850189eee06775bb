package handoff_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/chattask"
	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/event"
	"conch/backend/follow"
	"conch/backend/handoff"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/provider"
	"conch/backend/provider/openai"
	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// wireMsg is one message of an OpenAI chat request, as the server reads it.
type wireMsg struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (m wireMsg) text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case nil:
		return ""
	}
	b, _ := json.Marshal(m.Content)
	return string(b)
}

// asked is one request a model server got.
type asked struct {
	Model    string
	System   string
	Messages []wireMsg
	Tools    []string
}

// Task reports whether the request comes from a task's own chat.
func (a asked) Task() bool { return strings.Contains(a.System, "handed off from another chat") }

// First is the first user message: a task's instructions.
func (a asked) First() string {
	for _, m := range a.Messages {
		if m.Role == "user" {
			return m.text()
		}
	}
	return ""
}

// Last is the newest message.
func (a asked) Last() wireMsg {
	if len(a.Messages) == 0 {
		return wireMsg{}
	}
	return a.Messages[len(a.Messages)-1]
}

// Results are the tool results so far, oldest first.
func (a asked) Results() []string {
	var out []string
	for _, m := range a.Messages {
		if m.Role == "tool" {
			out = append(out, m.text())
		}
	}
	return out
}

// answer is what a scripted model says: text, tool calls, or an HTTP error.
type answer struct {
	Text    string
	Calls   [][2]string // name, JSON arguments
	Status  int
	Body    string
	Headers map[string]string
	// Out overrides the output tokens the usage reports (default 20).
	Out int
}

func say(text string) answer { return answer{Text: text} }

func callTool(name string, args any) answer {
	b, _ := json.Marshal(args)
	return answer{Calls: [][2]string{{name, string(b)}}}
}

// modelServer serves the OpenAI wire format (SSE chunks, tool_calls
// deltas split across chunks) from a scripted brain.
type modelServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []asked
}

func startModel(t *testing.T, models []string, brain func(ctx context.Context, a asked) answer) *modelServer {
	t.Helper()
	ms := &modelServer{}
	ms.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			var data []map[string]string
			for _, m := range models {
				data = append(data, map[string]string{"id": m, "object": "model"})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
			return
		}
		var req struct {
			Model    string    `json:"model"`
			Messages []wireMsg `json:"messages"`
			Tools    []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a := asked{Model: req.Model}
		for _, m := range req.Messages {
			if m.Role == "system" {
				a.System += m.text()
				continue
			}
			a.Messages = append(a.Messages, m)
		}
		for _, tl := range req.Tools {
			a.Tools = append(a.Tools, tl.Function.Name)
		}
		ms.mu.Lock()
		ms.seen = append(ms.seen, a)
		nth := len(ms.seen) // call ids stay apart across requests
		ms.mu.Unlock()
		ans := brain(r.Context(), a)
		if ans.Status != 0 {
			for k, v := range ans.Headers {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(ans.Status)
			fmt.Fprint(w, ans.Body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(delta any, finish any) {
			b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		}
		if len(ans.Calls) > 0 {
			for i, c := range ans.Calls {
				chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", nth, i), "type": "function", "function": map[string]any{"name": c[0], "arguments": ""}}}}, nil)
				half := len(c[1]) / 2
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c[1][:half]}}}}, nil)
				chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c[1][half:]}}}}, nil)
			}
			chunk(map[string]any{}, "tool_calls")
		} else {
			chunk(map[string]any{"role": "assistant", "content": ""}, nil)
			for _, piece := range strings.SplitAfter(ans.Text, " ") {
				chunk(map[string]any{"content": piece}, nil)
			}
			chunk(map[string]any{}, "stop")
		}
		out := 20
		if ans.Out > 0 {
			out = ans.Out
		}
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "choices": []any{},
			"usage": map[string]int{"prompt_tokens": 100, "completion_tokens": out, "total_tokens": 100 + out}})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	}))
	t.Cleanup(ms.Close)
	return ms
}

func (ms *modelServer) requests() []asked {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]asked(nil), ms.seen...)
}

// env is a whole hand-off engine over a real store: chats, tasks, the
// follower, real providers speaking to model servers.
type env struct {
	st      *store.Bolt
	bus     *event.Bus
	chats   *chat.Manager
	tasks   *taskrun.Runner
	h       *handoff.Service
	svc     *service.Service
	dir     string
	home    string
	prefs   pref.Preferences
	prefsMu sync.Mutex
	mark    string // the home's process mark
}

type engineOpt struct {
	id, name string
	srv      *modelServer
	fast     string
	// p, when set, is the provider itself (a real coding-agent CLI).
	p provider.Provider
}

func setup(t *testing.T, engines []engineOpt, tweak ...func(*env)) *env {
	t.Helper()
	home := t.TempDir()
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{st: st, bus: event.NewBus(), dir: t.TempDir(), home: home, prefs: pref.Defaults(), mark: "test-" + filepath.Base(home)}
	for _, f := range tweak {
		f(e)
	}
	if err := st.PutPreferences(e.preferences()); err != nil {
		t.Fatal(err)
	}
	providers := provider.Fixed{}
	for _, en := range engines {
		if en.p != nil {
			providers[en.id] = en.p
			continue
		}
		providers[en.id] = openai.New(openai.Config{ID: en.id, Name: en.name, BaseURL: en.srv.URL + "/v1",
			Category: "chat-only", DefaultModel: "big-model", FastModel: en.fast})
	}
	spending := budget.New(st, e.preferences)
	lookup := engine.Lookup{Providers: providers}
	worktrees := filepath.Join(home, "worktrees")
	e.chats = chat.New(chat.Config{
		Store: st, Bus: e.bus, Providers: providers, Home: e.dir,
		Logs: output.New(filepath.Join(home, "chats")), HTTP: http.DefaultClient,
		CommandGrace: 200 * time.Millisecond, DeltaInterval: time.Millisecond, Spending: spending,
		HomeMark: e.mark,
	})
	chatTasks := chattask.New(chattask.Config{Chats: e.chats, Engines: lookup, Preferences: e.preferences, Worktrees: worktrees})
	f := follow.New(e.chats)
	logs := output.New(filepath.Join(home, "tasks"))
	e.tasks = taskrun.New(taskrun.Config{Store: st, Bus: e.bus, Logs: logs,
		Home: e.dir, Conversations: chatTasks, Observe: f.Observe, AskTimeout: time.Minute, HomeMark: e.mark})
	e.h = handoff.New(handoff.Config{Chats: e.chats, Tasks: e.tasks, Follow: f, Engines: lookup,
		Spending: spending, Worktrees: worktrees, Preferences: e.preferences})
	e.chats.Offer(e.h)
	e.svc = service.New(service.Config{Tasks: e.tasks, Logs: logs, Chats: e.chats, Handoff: e.h, Fallbacks: chatTasks, Prefs: st})
	if err := e.tasks.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.chats.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	chattask.SettleLeft(e.tasks)
	f.Start(e.tasks)
	t.Cleanup(func() {
		e.tasks.Stop()
		e.chats.Stop()
		f.Stop()
		_ = st.Close()
		e.bus.Close()
	})
	return e
}

func (e *env) preferences() pref.Preferences {
	e.prefsMu.Lock()
	defer e.prefsMu.Unlock()
	return e.prefs
}

func (e *env) chat(t *testing.T, providerID string, mode task.Mode, dir string) conversation.Conversation {
	t.Helper()
	c, err := e.chats.Create(chat.CreateRequest{Provider: providerID, Mode: string(mode), Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls ok until it holds or 20 s pass.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) idle(t *testing.T, id string) conversation.Conversation {
	t.Helper()
	var c conversation.Conversation
	eventually(t, "chat "+id+" to finish its turn", func() bool {
		c, _ = e.chats.Snapshot(id)
		return !c.Running
	})
	return c
}

func (e *env) messages(t *testing.T, id string) []conversation.Message {
	t.Helper()
	p, err := e.chats.Get(id, 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	return p.Messages
}

// toolResults are the results of every call to name in chat id.
func (e *env) toolResults(t *testing.T, id, name string) []conversation.ToolResult {
	t.Helper()
	var out []conversation.ToolResult
	for _, m := range e.messages(t, id) {
		if m.Kind == conversation.ToolResultKind && m.ToolResult.Name == name {
			out = append(out, *m.ToolResult)
		}
	}
	return out
}

func (e *env) tasksOf(parent string) []task.Task {
	all, _ := e.st.Tasks()
	var out []task.Task
	for _, t := range all {
		if t.ParentConversationID == parent {
			out = append(out, t)
		}
	}
	return out
}

// gitRepo makes a repository with one commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		if out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("add", "README.md")
	run("commit", "-q", "-m", "readme")
	return dir
}

func branches(t *testing.T, repo string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "branch", "--list", "conch/*").CombinedOutput()
	if err != nil {
		t.Fatalf("git branch: %v\n%s", err, out)
	}
	return string(out)
}

// handsOff is the parent chat's model: it calls tool with args once, then
// answers.
func handsOff(tool string, args any) func(context.Context, asked) answer {
	return func(_ context.Context, a asked) answer {
		if len(a.Results()) == 0 {
			return callTool(tool, args)
		}
		return say("Handed off.")
	}
}

// onlyTask waits for the one task of chat parent to finish.
func (e *env) onlyTask(t *testing.T, parent string) task.Task {
	t.Helper()
	var tk task.Task
	eventually(t, "the task to finish", func() bool {
		tasks := e.tasksOf(parent)
		if len(tasks) == 1 {
			tk = tasks[0]
		}
		return len(tasks) == 1 && tk.Status.Finished()
	})
	return tk
}
