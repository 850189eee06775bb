//go:build linux

package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conch/backend/client"
	"conch/backend/conversation"
	"conch/backend/host"
	"conch/backend/task"
	"conch/backend/testrig/agentrig"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/chatcompletions"
	"conch/backend/testrig/sshd"
)

// installClaude puts the real Claude Code CLI on the host as its user
// would have it, signed in to a model server: here a scripted one on
// loopback answering with brain.
func installClaude(t *testing.T, s *sshd.Server, brain modelserver.Brain) {
	t.Helper()
	rig, _ := agentrig.Claude(t, brain, 0)
	s.InstallCLI("claude", rig.Bin, rig.Env)
}

// readyHost adds the rig's host as "box", accepts its key and tests it.
func readyHost(t *testing.T, c *client.Client, s *sshd.Server) host.TestResult {
	t.Helper()
	return readyHostAs(t, c, "box", s)
}

// readyHostAs adds the rig's host as id, accepts its key and tests it.
func readyHostAs(t *testing.T, c *client.Client, id string, s *sshd.Server) host.TestResult {
	t.Helper()
	ctx := context.Background()
	if err := c.Do(ctx, http.MethodPut, "/api/hosts/"+id, map[string]string{"target": s.Alias}, nil); err != nil {
		t.Fatal(err)
	}
	var tr host.TestResult
	if err := c.Do(ctx, http.MethodPost, "/api/hosts/"+id+"/test", nil, &tr); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, http.MethodPost, "/api/hosts/"+id+"/accept-key", map[string]string{"fingerprint": tr.Host.Fingerprint}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, http.MethodPost, "/api/hosts/"+id+"/test", nil, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// joinConfigs writes one ssh config file holding every one of files.
func joinConfigs(t *testing.T, out string, files ...string) {
	t.Helper()
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, b...), '\n')
	}
	if err := os.WriteFile(out, all, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A chat's background task on a host runs on the real Claude Code CLI
// installed there, as the host's user in the host's home: in ask mode its
// command asks first, the question is answered on this computer, the
// command runs there, and the task's result, its transcript and its
// spend come home into its chat here and the chat it came from. A host
// nobody added, or a provider the host does not have, starts nothing and
// says what can take the work.
func TestAChatTaskRunsOnClaudeCodeOnAHost(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	installClaude(t, s, func(turn modelserver.Turn) modelserver.Reply {
		switch len(turn.Results()) {
		case 0:
			return modelserver.Reply{Calls: []modelserver.Call{agentrig.Agents[0].Run("id -un > who.txt")}}
		}
		return modelserver.Reply{Text: "Wrote who.txt on the host."}
	})
	r := startRemoteServe(t, s)
	c := r.dial(t)
	ctx := context.Background()
	tr := readyHost(t, c, s)
	if tr.Host.Status != "ready" || len(tr.Host.Providers) != 1 || tr.Host.Providers[0].ID != "claude" {
		t.Fatalf("the host after its test: %s (%s), CLIs %+v", tr.Host.Status, tr.Host.Reason, tr.Host.Providers)
	}

	var parent conversation.Conversation
	if err := c.Do(ctx, http.MethodPost, "/api/conversations", map[string]any{"provider": "shell", "mode": "ask", "cwd": t.TempDir(), "limit": 5}, &parent); err != nil {
		t.Fatal(err)
	}
	send := func(o map[string]any) (task.Task, error) {
		var tk task.Task
		err := c.Do(ctx, http.MethodPost, "/api/tasks", map[string]any{"text": "Write who you are to who.txt", "conversationId": parent.ID, "options": o}, &tk)
		return tk, err
	}
	for _, bad := range []struct {
		o    map[string]any
		want string
	}{
		{map[string]any{"host": "nope", "provider": "claude-code"}, "the hosts that can take work are box"},
		{map[string]any{"host": "box", "provider": "codex"}, "found there: claude-code (Claude Code)"},
		{map[string]any{"host": "box", "provider": "claude-code", "cwd": "relative/path"}, "neither ~, ~/… nor an absolute path"},
		{map[string]any{"host": "box", "provider": "claude-code", "mode": "auto"}, "cannot run in auto mode when its chat is in ask mode"},
	} {
		_, err := send(bad.o)
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(apiErr.Message, bad.want) {
			t.Errorf("options %v: %v, want a 400 saying %q", bad.o, err, bad.want)
		}
	}

	tk, err := send(map[string]any{"host": "box", "provider": "claude-code"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Host != "box" || tk.Cwd != "~" || tk.Provider != "claude-code" || tk.Mode != task.Ask || tk.ConversationID == "" {
		t.Fatalf("the task as sent: host %q cwd %q provider %q mode %s chat %q", tk.Host, tk.Cwd, tk.Provider, tk.Mode, tk.ConversationID)
	}
	asked := waitHostTask(t, r, tk.ID, "a question", func(tk task.Task) bool { return tk.Status == task.NeedsYou && tk.Ask != nil })
	if !strings.Contains(asked.Ask.Detail, "id -un > who.txt") {
		t.Errorf("the question here: %+v", asked.Ask)
	}
	if _, err := os.Stat(filepath.Join(s.Home, "who.txt")); err == nil {
		t.Fatal("the command ran before it was allowed")
	}
	// Its chat here shows the question too; the task takes the answer.
	waitChat(t, c, tk.ConversationID, "its chat here showing the question", 10*time.Second, func(p chatPage) bool {
		return p.Conversation.Ask != nil && p.Conversation.Ask.ID == asked.Ask.ID
	})
	err = c.Do(ctx, http.MethodPost, "/api/conversations/"+tk.ConversationID+"/asks/"+asked.Ask.ID, map[string]any{"allow": true}, nil)
	if apiErr := (*client.Error)(nil); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(apiErr.Message, "answer them on the task") {
		t.Errorf("answering on the chat of a task on a host: %v", err)
	}
	// Two clients answer at once: one answer is taken, the other is a 409.
	var wg sync.WaitGroup
	answers := make([]error, 2)
	for i := range answers {
		wg.Go(func() {
			answers[i] = c.Do(ctx, http.MethodPost, "/api/tasks/"+tk.ID+"/answer", map[string]any{"askId": asked.Ask.ID, "allow": true}, nil)
		})
	}
	wg.Wait()
	if took := countTaken(t, answers); took != 1 {
		t.Fatalf("%d of two answers at once were taken: %v", took, answers)
	}
	done := waitHostTask(t, r, tk.ID, "an end", func(tk task.Task) bool { return tk.Status.Finished() })
	if done.Status != task.Done || done.Result == nil || done.Result.Text != "Wrote who.txt on the host." {
		t.Fatalf("it ended %s (%s), result %+v", done.Status, done.Error, done.Result)
	}
	b, err := os.ReadFile(filepath.Join(s.Home, "who.txt"))
	if err != nil || string(b) != s.User+"\n" {
		t.Fatalf("who.txt on the host: %q %v (want the host's user %s)", b, err, s.User)
	}

	page := readChat(t, c, tk.ConversationID)
	joined := page.said()
	if page.Conversation.Host != "box" || page.Conversation.Ask != nil || !strings.Contains(joined, "user: Write who you are to who.txt") || !strings.Contains(joined, "assistant: Wrote who.txt on the host.") {
		t.Errorf("its chat here (host %q):\n%s", page.Conversation.Host, joined)
	}
	if page.Conversation.Spent <= 0 {
		t.Errorf("its chat here spent %v: what it spent there did not come home", page.Conversation.Spent)
	}
	if err := c.Do(ctx, http.MethodPost, "/api/conversations/"+tk.ConversationID+"/messages", map[string]string{"text": "and again"}, nil); err == nil {
		t.Error("a message was taken by the chat of a task on a host: its turns run there")
	}
	waitChat(t, c, parent.ID, "the chat it came from holding its result and spend", 10*time.Second, func(p chatPage) bool {
		final := false
		for _, m := range p.Messages {
			final = final || m.TaskEvent != nil && m.TaskEvent.TaskID == tk.ID && m.TaskEvent.Status == task.Done
		}
		return final && p.Conversation.Spent > 0
	})
}

// waitHostTask returns the task once ok says so.
func waitHostTask(t *testing.T, r *remoteServe, id, what string, ok func(task.Task) bool) task.Task {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		tk := r.task(t, id)
		if ok(tk) {
			return tk
		}
		if time.Now().After(deadline) || tk.Status.Finished() {
			t.Fatalf("the task did not come to %s: %s (%s) current %q steps %q", what, tk.Status, tk.Error, tk.Current, tk.Steps)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A chat of the person's that works on a host: every turn runs there, on
// the Claude Code CLI installed there, as the host's user; its question
// is answered here, in the chat, and what it says comes back seq for seq.
// A second message is a second turn there.
func TestAChatWorksOnAHost(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	installClaude(t, s, func(turn modelserver.Turn) modelserver.Reply {
		switch {
		case strings.Contains(turn.FirstUser(), "And again"):
			return modelserver.Reply{Text: "Second answer, from the host."}
		case len(turn.Results()) == 0:
			return modelserver.Reply{Calls: []modelserver.Call{agentrig.Agents[0].Run("id -un > chat.txt")}}
		}
		return modelserver.Reply{Text: "Wrote chat.txt from the host chat."}
	})
	r := startRemoteServe(t, s)
	c := r.dial(t)
	ctx := context.Background()
	readyHost(t, c, s)
	var conv conversation.Conversation
	if err := c.Do(ctx, http.MethodPost, "/api/conversations", map[string]any{"host": "nope"}, nil); err == nil {
		t.Fatal("a chat on a host nobody added was made")
	}
	if err := c.Do(ctx, http.MethodPost, "/api/conversations", map[string]any{"host": "box", "mode": "ask"}, &conv); err != nil {
		t.Fatal(err)
	}
	if conv.Host != "box" || conv.Provider != "claude-code" || conv.Cwd != "~" {
		t.Fatalf("the chat as made: host %q provider %q cwd %q", conv.Host, conv.Provider, conv.Cwd)
	}
	type page = chatPage
	waitChat := func(what string, ok func(page) bool) page {
		t.Helper()
		return waitChat(t, c, conv.ID, what, 60*time.Second, ok)
	}
	// Two clients send at once: one message is taken, the other refused
	// while the chat replies there.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			errs[i] = c.Do(ctx, http.MethodPost, "/api/conversations/"+conv.ID+"/messages", map[string]string{"text": "Write who you are to chat.txt"}, nil)
		})
	}
	wg.Wait()
	if taken := countTaken(t, errs); taken != 1 {
		t.Fatalf("%d of two sends at once were taken: %v", taken, errs)
	}
	asked := waitChat("a question", func(p page) bool { return p.Conversation.Ask != nil })
	if !strings.Contains(asked.Conversation.Ask.Detail, "id -un > chat.txt") || !asked.Conversation.Running {
		t.Fatalf("the question: %+v (running %v)", asked.Conversation.Ask, asked.Conversation.Running)
	}
	// Conch killed while the question waits: the turn waits on there; the
	// next Conch follows it again, and the answer given there reaches it.
	_ = r.srv.Cmd.Process.Signal(syscall.SIGKILL)
	_ = r.srv.Cmd.Wait()
	r.start(t)
	c = r.dial(t)
	again := waitChat("the question again, after the restart", func(p page) bool { return p.Conversation.Ask != nil })
	if again.Conversation.Ask.ID != asked.Conversation.Ask.ID {
		t.Fatalf("after the restart the chat asks %+v, not the question it waited on", again.Conversation.Ask)
	}
	if err := c.Do(ctx, http.MethodPost, "/api/conversations/"+conv.ID+"/asks/"+asked.Conversation.Ask.ID, map[string]bool{"allow": true}, nil); err != nil {
		t.Fatal(err)
	}
	said := func(p page) string { return p.said() }
	done := waitChat("its reply", func(p page) bool {
		return !p.Conversation.Running && strings.Contains(said(p), "assistant: Wrote chat.txt from the host chat.")
	})
	if b, err := os.ReadFile(filepath.Join(s.Home, "chat.txt")); err != nil || string(b) != s.User+"\n" {
		t.Fatalf("chat.txt on the host: %q %v", b, err)
	}
	for i, m := range done.Messages {
		if m.Seq != uint64(i+1) || m.ConversationID != conv.ID {
			t.Fatalf("message %d here is seq %d of %q: the host's messages did not come seq for seq\n%s", i+1, m.Seq, m.ConversationID, said(done))
		}
	}
	if err := c.Do(ctx, http.MethodPost, "/api/conversations/"+conv.ID+"/messages", map[string]string{"text": "And again"}, nil); err != nil {
		t.Fatal(err)
	}
	waitChat("its second reply", func(p page) bool {
		return !p.Conversation.Running && strings.Contains(said(p), "assistant: Second answer, from the host.")
	})
	// Its background task stays in its folder there, as a chat's here does.
	err := c.Do(ctx, http.MethodPost, "/api/tasks", map[string]any{"text": "Look elsewhere", "conversationId": conv.ID, "options": map[string]string{"cwd": "~/elsewhere"}}, nil)
	if apiErr := (*client.Error)(nil); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(apiErr.Message, "works in the chat's folder (box:~)") {
		t.Errorf("a task of a chat on a host in another folder there: %v, want a 400", err)
	}
	// A mode change goes there; its notice comes back from there, seq for
	// seq. The provider cannot change.
	if err := c.Do(ctx, http.MethodPatch, "/api/conversations/"+conv.ID, map[string]string{"mode": "plan"}, nil); err != nil {
		t.Fatal(err)
	}
	moded := waitChat("the mode's notice from there", func(p page) bool { return strings.Contains(said(p), "notice: Mode: plan.") })
	if moded.Conversation.Mode != "plan" {
		t.Errorf("its mode here is %s", moded.Conversation.Mode)
	}
	for i, m := range moded.Messages {
		if m.Seq != uint64(i+1) {
			t.Fatalf("after the mode change, message %d is seq %d\n%s", i+1, m.Seq, said(moded))
		}
	}
	err = c.Do(ctx, http.MethodPatch, "/api/conversations/"+conv.ID, map[string]string{"provider": "shell"}, nil)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("changing the provider of a chat on a host: %v, want a 400", err)
	}
}

// countTaken counts the calls that were taken; every other must be a 409.
func countTaken(t *testing.T, errs []error) int {
	t.Helper()
	taken := 0
	for _, err := range errs {
		var apiErr *client.Error
		switch {
		case err == nil:
			taken++
		case !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict:
			t.Errorf("a call refused as %v, want a 409", err)
		}
	}
	return taken
}

// An API-model provider connected here carries a chat's task to a host
// only with the person's OK for that host: without it the task is refused
// saying where to give it; with it the task runs on the runner there, the
// provider's key lent with it, in memory only (no file of the runner's
// holds it). Its command asks here and runs there as the host's user.
func TestAnAPIModelWorksOnAHostWithYourOK(t *testing.T) {
	const secret = "sk-lent-only-in-memory"
	s := sshd.Start(t, sshd.Options{})
	model := chatcompletions.New(t, func(turn modelserver.Turn) modelserver.Reply {
		if len(turn.Results()) == 0 {
			return modelserver.Reply{Calls: []modelserver.Call{{ID: "call_r", Name: "run_command", Args: json.RawMessage(`{"command":"id -un > api.txt"}`)}}}
		}
		return modelserver.Reply{Text: "Wrote api.txt on the host."}
	}, chatcompletions.Models("test-model"))
	r := startRemoteServe(t, s)
	c := r.dial(t)
	ctx := context.Background()
	tr := readyHost(t, c, s)
	if err := c.Do(ctx, http.MethodPut, "/api/providers/scripted", map[string]any{"kind": "openai", "name": "Scripted", "baseUrl": model.BaseURL(), "model": "test-model", "apiKey": secret}, nil); err != nil {
		t.Fatal(err)
	}
	var parent conversation.Conversation
	if err := c.Do(ctx, http.MethodPost, "/api/conversations", map[string]any{"provider": "scripted", "model": "test-model", "mode": "ask", "cwd": t.TempDir()}, &parent); err != nil {
		t.Fatal(err)
	}
	send := func() (task.Task, error) {
		var tk task.Task
		err := c.Do(ctx, http.MethodPost, "/api/tasks", map[string]any{"text": "Write who you are to api.txt", "conversationId": parent.ID, "options": map[string]any{"host": "box", "provider": "scripted"}}, &tk)
		return tk, err
	}
	var apiErr *client.Error
	if _, err := send(); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(apiErr.Message, "only with your OK") {
		t.Fatalf("an API model on a host without the OK: %v", err)
	}
	for _, bad := range [][]string{{"shell"}, {"nope"}, {"scripted", "scripted"}} {
		err := c.Do(ctx, http.MethodPut, "/api/hosts/box", map[string]any{"target": s.Alias, "models": bad, "rev": tr.Host.Rev}, nil)
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
			t.Errorf("allowing %v: %v, want a 400", bad, err)
		}
	}
	if err := c.Do(ctx, http.MethodPut, "/api/hosts/box", map[string]any{"target": s.Alias, "models": []string{"scripted"}, "rev": tr.Host.Rev}, nil); err != nil {
		t.Fatal(err)
	}
	tk, err := send()
	if err != nil {
		t.Fatal(err)
	}
	asked := waitHostTask(t, r, tk.ID, "a question", func(tk task.Task) bool { return tk.Status == task.NeedsYou && tk.Ask != nil })
	if !strings.Contains(asked.Ask.Detail, "id -un > api.txt") {
		t.Errorf("the question here: %+v", asked.Ask)
	}
	if err := c.Do(ctx, http.MethodPost, "/api/tasks/"+tk.ID+"/answer", map[string]any{"askId": asked.Ask.ID, "allow": true}, nil); err != nil {
		t.Fatal(err)
	}
	done := waitHostTask(t, r, tk.ID, "an end", func(tk task.Task) bool { return tk.Status.Finished() })
	if done.Status != task.Done || done.Result == nil || done.Result.Text != "Wrote api.txt on the host." {
		t.Fatalf("it ended %s (%s), result %+v", done.Status, done.Error, done.Result)
	}
	if b, err := os.ReadFile(filepath.Join(s.Home, "api.txt")); err != nil || string(b) != s.User+"\n" {
		t.Fatalf("api.txt on the host: %q %v", b, err)
	}
	keyed := 0
	for _, req := range model.Requests() {
		if req.Path == "/v1/chat/completions" {
			if req.Header.Get("Authorization") != "Bearer "+secret {
				t.Errorf("a model request from the host carried %q", req.Header.Get("Authorization"))
			}
			keyed++
		}
	}
	if keyed < 2 {
		t.Fatalf("the model had %d requests, want the task's two", keyed)
	}
	// No file of the runner's holds the key.
	root := filepath.Join(s.Home, ".conch-remote")
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A chat on a host whose twin is gone there (the runner's home wiped, as
// a host reinstalled would be) stops waiting here once Conch reaches the
// host again: it no longer replies or asks.
func TestAChatOnAHostWhoseTwinIsGoneSettles(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	installClaude(t, s, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Calls: []modelserver.Call{agentrig.Agents[0].Run("id -un > gone.txt")}}
	})
	r := startRemoteServe(t, s)
	c := r.dial(t)
	ctx := context.Background()
	readyHost(t, c, s)
	var conv conversation.Conversation
	if err := c.Do(ctx, http.MethodPost, "/api/conversations", map[string]any{"host": "box", "mode": "ask"}, &conv); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, http.MethodPost, "/api/conversations/"+conv.ID+"/messages", map[string]string{"text": "Write who you are"}, nil); err != nil {
		t.Fatal(err)
	}
	read := func() conversation.Conversation { return readChat(t, c, conv.ID).Conversation }
	deadline := time.Now().Add(60 * time.Second)
	for read().Ask == nil {
		if time.Now().After(deadline) {
			t.Fatal("the chat never asked")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The runner and everything of it there go.
	for _, pid := range sshd.Processes(s.UID) {
		if strings.Contains(sshd.Cmdline(pid), " runner --home ") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := os.RemoveAll(filepath.Join(s.Home, ".conch-remote", "home")); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		cur := read()
		if !cur.Running && cur.Ask == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chat still waits on a twin that is gone: running %v ask %+v", cur.Running, cur.Ask)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Its next message is refused, saying so: a new twin would start over.
	err := c.Do(ctx, http.MethodPost, "/api/conversations/"+conv.ID+"/messages", map[string]string{"text": "Again"}, nil)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict || !strings.Contains(apiErr.Message, "is gone") {
		t.Fatalf("a message to a chat whose twin is gone: %v, want a 409 saying so", err)
	}
}

// dial is a client of the Conch the rig serves.
func (r *remoteServe) dial(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.Dial(r.home)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// chatPage is a chat and its newest messages, as GET
// /api/conversations/:id answers.
type chatPage struct {
	Conversation conversation.Conversation `json:"conversation"`
	Messages     []conversation.Message    `json:"messages"`
}

// said is the chat's messages, a line each: "kind: text".
func (p chatPage) said() string {
	lines := make([]string, 0, len(p.Messages))
	for _, m := range p.Messages {
		lines = append(lines, string(m.Kind)+": "+m.Text)
	}
	return strings.Join(lines, "\n")
}

// readChat reads chat id.
func readChat(t *testing.T, c *client.Client, id string) chatPage {
	t.Helper()
	var p chatPage
	if err := c.Do(context.Background(), http.MethodGet, "/api/conversations/"+id, nil, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitChat returns chat id once ok says so, failing the test after d.
func waitChat(t *testing.T, c *client.Client, id, what string, d time.Duration, ok func(chatPage) bool) chatPage {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		p := readChat(t, c, id)
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chat did not come to %s: running %v ask %+v, %d messages\n%s", what, p.Conversation.Running, p.Conversation.Ask, len(p.Messages), p.said())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
