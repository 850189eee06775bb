package handoff_test

import (
	"context"
	"encoding/json"
	"net/http"
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
	"conch/backend/handoff"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/provider"
	"conch/backend/provider/openai"
	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/chatcompletions"
)

// asked is one request a model server got.
type asked struct{ modelserver.Turn }

// Task reports whether the request comes from a task's own chat.
func (a asked) Task() bool { return strings.Contains(a.System, "handed off from another chat") }

// First is the first user message: a task's instructions.
func (a asked) First() string { return a.FirstUser() }

// Last is the newest message.
func (a asked) Last() modelserver.Message {
	if len(a.Messages) == 0 {
		return modelserver.Message{}
	}
	return a.Messages[len(a.Messages)-1]
}

// Results are the texts of the tool results so far, oldest first.
func (a asked) Results() []string {
	var out []string
	for _, m := range a.Turn.Results() {
		out = append(out, m.Text)
	}
	return out
}

// answer is what a scripted model says: text, tool calls, or an HTTP
// error; OutputTokens overrides the output tokens the usage reports.
type answer = modelserver.Reply

func say(text string) answer { return answer{Text: text} }

func callTool(name string, args any) answer {
	b, _ := json.Marshal(args)
	return answer{Calls: []modelserver.Call{{Name: name, Args: b}}}
}

// modelServer is a scripted model speaking the OpenAI wire format.
type modelServer struct{ *chatcompletions.Server }

// startModel starts a model server listing models and answering with
// brain, which sees each request's context.
func startModel(t *testing.T, models []string, brain func(ctx context.Context, a asked) answer) *modelServer {
	t.Helper()
	return &modelServer{chatcompletions.NewContext(t, func(ctx context.Context, turn modelserver.Turn) modelserver.Reply {
		return brain(ctx, asked{turn})
	}, chatcompletions.Models(models...))}
}

func (ms *modelServer) requests() []asked {
	var out []asked
	for _, turn := range ms.Turns() {
		out = append(out, asked{turn})
	}
	return out
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
		providers[en.id] = openai.New(openai.Config{ID: en.id, Name: en.name, BaseURL: en.srv.BaseURL(),
			Category: "chat-only", DefaultModel: "big-model", FastModel: en.fast})
	}
	spending := budget.New(st, e.preferences)
	lookup := engine.Lookup{Providers: providers}
	worktrees := filepath.Join(home, "worktrees")
	e.chats = chat.New(chat.Config{
		Store: st, Bus: e.bus, Providers: providers, Home: e.dir,
		Logs: output.New(filepath.Join(home, "chats")), HTTP: http.DefaultClient,
		CommandGrace: 200 * time.Millisecond, DeltaInterval: time.Millisecond, Spending: spending,
		HomeMark: e.mark, Limit: chattask.Limits(st, nil),
	})
	chatTasks := chattask.New(chattask.Config{Chats: e.chats, Store: st, Engines: lookup, Preferences: e.preferences, Worktrees: worktrees})
	logs := output.New(filepath.Join(home, "tasks"))
	e.tasks = taskrun.New(taskrun.Config{Store: st, Bus: e.bus, Logs: logs,
		Home: e.dir, Conversations: chatTasks, AskTimeout: time.Minute, HomeMark: e.mark})
	f, err := chattask.NewFollower(e.chats, e.tasks)
	if err != nil {
		t.Fatal(err)
	}
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
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.h.Stop()
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
