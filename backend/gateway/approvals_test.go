package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/output"
	"conch/backend/provider"
	"conch/backend/provider/shell"
	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// setupInbox starts a gateway with both tasks (the shell) and chats (p),
// as the app has them: one store, one bus.
func setupInbox(t *testing.T, p provider.Provider) *env {
	t.Helper()
	home, dir := t.TempDir(), t.TempDir()
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	logs := output.New(filepath.Join(home, "tasks"))
	runner := taskrun.New(taskrun.Config{
		Store: st, Bus: bus, Logs: logs, Home: dir,
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: dir, Grace: 300 * time.Millisecond}},
	})
	if err := runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := chat.New(chat.Config{Store: st, Bus: bus, Providers: provider.Fixed{"fake": p}, Home: dir})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	gw, err := gateway.New(gateway.Config{API: service.New(service.Config{Tasks: runner, Logs: logs, Chats: m, Prefs: st}), Bus: bus, Token: token}, srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = gw
	srv.Start()
	t.Cleanup(func() {
		bus.Close()
		srv.Close()
		m.Stop()
		runner.Stop()
		_ = st.Close()
	})
	return &env{srv: srv, base: srv.URL, dir: dir, bus: bus}
}

func (e *env) approvals(t *testing.T) []service.Approval {
	t.Helper()
	resp, b := e.do(t, req{method: "GET", path: "/api/approvals"})
	if resp.StatusCode != 200 {
		t.Fatalf("approvals: %d %s", resp.StatusCode, b)
	}
	body := decodeAs[struct {
		Approvals []service.Approval `json:"approvals"`
	}](t, b)
	if body.Approvals == nil {
		t.Fatalf("approvals is null, want a list: %s", b)
	}
	return body.Approvals
}

// race sends the same POST from two clients at once and returns both
// statuses, in no particular order.
func (e *env) race(t *testing.T, path, body string) []int {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make([]int, 2)
	errs := make([]error, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hr, err := http.NewRequest("POST", e.base+path, strings.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Authorization", "Bearer "+token)
			<-start
			resp, err := (&http.Client{}).Do(hr)
			if err != nil {
				errs[i] = err
				return
			}
			_ = resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return codes
}

func oneWins(t *testing.T, what string, codes []int) {
	t.Helper()
	ok, conflict := 0, 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
			conflict++
		}
	}
	if ok != 1 || conflict != 1 {
		t.Fatalf("%s answered twice at once: statuses %v, want one 200 and one 409", what, codes)
	}
}

func TestApprovalsListTasksAndChatsAndOneAnswerWins(t *testing.T) {
	e := setupInbox(t, &twoStep{})

	// A chat in ask mode asks before it writes a file.
	_, b := e.do(t, req{method: "POST", path: "/api/conversations", body: `{"provider":"fake","mode":"ask","title":"Write it","cwd":"` + e.dir + `"}`})
	c := decodeAs[conversation.Conversation](t, b)
	if resp, b := e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/messages", body: `{"text":"write a file"}`}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("send: %d %s", resp.StatusCode, b)
	}
	chatAsk := e.waitConversation(t, c.ID, func(c conversation.Conversation) bool { return c.Ask != nil }).Conversation.Ask

	// A shell task in ask mode asks before it runs, later.
	tk := e.create(t, `{"text":"true","title":"Say yes","options":{"mode":"ask","cwd":"`+e.dir+`"}}`)
	asking := e.waitStatus(t, tk.ID, task.NeedsYou)

	got := e.approvals(t)
	if len(got) != 2 {
		t.Fatalf("approvals: %+v, want the chat's question and the task's", got)
	}
	first, second := got[0], got[1]
	if first.Kind != service.ApprovalChat || first.ConversationID != c.ID || first.TaskID != "" || first.Title != "Write it" || first.Ask.ID != chatAsk.ID || first.Cwd != e.dir {
		t.Errorf("first (oldest) = %+v, want the chat's question", first)
	}
	if ch := first.Ask.Change; ch == nil || ch.Path != "a.txt" || ch.After != "hi" || !ch.New {
		t.Errorf("the chat's question shows the write as %+v, want a.txt, new, \"hi\"", ch)
	}
	if second.Kind != service.ApprovalTask || second.TaskID != tk.ID || second.Title != "Say yes" || second.Ask.ID != asking.Ask.ID || second.ConversationID != "" {
		t.Errorf("second = %+v, want the task's question", second)
	}

	oneWins(t, "a task's question", e.race(t, "/api/tasks/"+tk.ID+"/answer", fmt.Sprintf(`{"askId":%q,"allow":true}`, asking.Ask.ID)))
	oneWins(t, "a chat's question", e.race(t, "/api/conversations/"+c.ID+"/asks/"+chatAsk.ID, `{"allow":true}`))

	e.waitStatus(t, tk.ID, task.Done)
	e.waitConversation(t, c.ID, func(c conversation.Conversation) bool { return !c.Running })
	if got := e.approvals(t); len(got) != 0 {
		t.Fatalf("approvals after both were answered: %+v", got)
	}
}

func TestApprovalsRefusesOtherMethods(t *testing.T) {
	e := setupInbox(t, &twoStep{})
	resp, b := e.do(t, req{method: "POST", path: "/api/approvals", body: `{}`})
	wantError(t, resp, b, http.StatusMethodNotAllowed, "method_not_allowed")
}
