package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/conversation"
	"conch/backend/errcode"
	"conch/backend/gateway"
	"conch/backend/routine"
	"conch/backend/service"
	"conch/backend/task"
)

// call sends one API request to a started gateway and decodes its answer.
func call(t *testing.T, gw *servedGateway, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, gw.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gw.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return res.StatusCode
}

// A real routine on the real app, made over HTTP: it runs on its schedule
// twice, each run a task in a chat of its own whose origin is the routine;
// run now twice at once starts one run and refuses the other; a schedule
// Conch does not understand is a 400 that says what it does. The schedule
// has a seconds field (allowed in tests only), so this takes seconds, not
// minutes.
func TestARealRoutineRunsTwiceEachATaskWithItsOwnChat(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	routineSeconds = true
	defer func() { routineSeconds = false }()
	ctx := context.Background()
	a, err := openApp(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ln, _, err := gateway.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := startGateway(ctx, a, ln, nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Stop()
	dir := t.TempDir()

	var bad errcode.Body
	if code := call(t, gw, "POST", "/api/routines", `{"kind":"command","text":"true","schedule":"now and then","cwd":"`+dir+`"}`, &bad); code != http.StatusBadRequest ||
		bad.Error.Code != errcode.Invalid || !strings.Contains(bad.Error.Message, "every weekday at 9:00") {
		t.Fatalf("a bad schedule: %d %+v", code, bad)
	}

	var card routine.Card
	body := `{"name":"tick","kind":"command","text":"echo tick-$((6*7))","schedule":"*/2 * * * * *","mode":"auto","cwd":"` + dir + `"}`
	if code := call(t, gw, "POST", "/api/routines", body, &card); code != http.StatusCreated || card.Routine.Provider != task.ShellProvider {
		t.Fatalf("create: %d %+v", code, card)
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < 2 {
		c, err := a.svc.GetRoutine(card.Routine.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Last != nil && c.Last.Status == task.Done {
			seen[c.Last.TaskID] = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("the routine did not run twice: %+v", c)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var yes = true
	if _, err := a.svc.PatchRoutine(card.Routine.ID, routine.PatchRequest{Paused: &yes}); err != nil {
		t.Fatal(err)
	}
	chats := map[string]bool{}
	for id := range seen {
		tk, err := a.svc.GetTask(id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.RoutineID != card.Routine.ID || tk.ConversationID == "" || !strings.Contains(tk.Summary, "tick-42") {
			t.Fatalf("a run's task: %+v", tk)
		}
		page, err := a.svc.GetConversation(tk.ConversationID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if o := page.Conversation.Origin; o.Kind != conversation.FromRoutine || o.RoutineID != card.Routine.ID || o.TaskID != tk.ID {
			t.Fatalf("a run's chat: %+v", o)
		}
		chats[tk.ConversationID] = true
	}
	if len(chats) != 2 {
		t.Fatalf("two runs shared a chat: %v", chats)
	}
	list, err := a.svc.ListConversations(service.ConversationQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Conversations {
		if chats[c.ID] {
			t.Fatalf("a run's chat is in the chat list: %+v", c)
		}
	}

	// Run now, twice at once, on a run that takes a while: one starts.
	var slow routine.Card
	body = `{"kind":"command","text":"sleep 1","schedule":"every day at 3:00","mode":"auto","cwd":"` + dir + `"}`
	if code := call(t, gw, "POST", "/api/routines", body, &slow); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = call(t, gw, "POST", "/api/routines/"+slow.Routine.ID+"/run", "", nil) }()
	}
	wg.Wait()
	if !(codes[0] == 201 && codes[1] == 409) && !(codes[0] == 409 && codes[1] == 201) {
		t.Fatalf("run now twice at once answered %v; want one 201 and one 409", codes)
	}
	if code := call(t, gw, "DELETE", "/api/routines/"+slow.Routine.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code := call(t, gw, "GET", "/api/routines/"+slow.Routine.ID, "", nil); code != http.StatusNotFound {
		t.Fatalf("a deleted routine: %d", code)
	}
}
