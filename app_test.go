package main

import (
	"conch/backend/conversation"
	"conch/backend/errcode"
	"conch/backend/gateway"
	"conch/backend/push"
	"conch/backend/routine"
	"conch/backend/search"
	"conch/backend/service"
	"conch/backend/startstop"
	"conch/backend/task"
	"conch/backend/taskrun"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every long-lived part keeps the same promises: Stop is safe before Start
// and twice, Start twice is an error, and the app starts them in the order
// docs/ARCHITECTURE.md gives.
func TestThePartsKeepOneLifecycle(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // no desktop: the plain notifier
	ctx := context.Background()

	a, err := newApp(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.parts.Parts() {
		p.Stop() // before Start
		p.Stop() // and twice
		if err := p.Start(ctx); err == nil {
			t.Errorf("%s started after it was stopped", p.Name)
		}
	}
	a.close()
	a.close()

	b, err := openApp(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	for _, p := range b.parts.Parts() {
		if err := p.Start(ctx); err == nil {
			t.Errorf("%s started twice without an error", p.Name)
		}
	}
	if err := b.parts.Start(ctx); !errors.Is(err, startstop.ErrStarted) {
		t.Errorf("the app's parts started twice: %v", err)
	}
	if _, err := b.chats.List("", "", 0); err != nil {
		t.Errorf("the chats do not answer once started: %v", err)
	}
}

func TestTheDocumentedStartOrderIsTheCodes(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	a, err := newApp(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	want := "Start order: " + strings.Join(a.parts.Names(), ", ") + "."
	if !strings.Contains(string(doc), want) {
		t.Fatalf("docs/ARCHITECTURE.md does not say %q", want)
	}
}

// The gateway `conch serve` starts after the app keeps the same promises,
// and answers the API while it runs.
func TestTheGatewayKeepsTheLifecycle(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	ctx := context.Background()
	a, err := openApp(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	listen := func() net.Listener {
		ln, _, err := gateway.Listen("127.0.0.1:0", false)
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	unstarted, err := newGateway(a, listen(), nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	unstarted.Stop() // before Start: lets the listener go
	unstarted.Stop()
	if err := unstarted.Start(ctx); err == nil {
		t.Fatal("a stopped gateway started")
	}
	if _, err := net.Dial("tcp", strings.TrimPrefix(unstarted.base, "http://")); err == nil {
		t.Fatal("a gateway stopped before it started still listens")
	}

	gw, err := startGateway(ctx, a, listen(), nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(ctx); err == nil {
		t.Fatal("the gateway started twice without an error")
	}
	req, _ := http.NewRequest(http.MethodGet, gw.base+"/api/about", nil)
	req.Header.Set("Authorization", "Bearer "+gw.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/about answered %s", res.Status)
	}
	if _, err := os.Stat(gw.urlPath); err != nil {
		t.Fatalf("the gateway's address is not recorded: %v", err)
	}
	gw.Stop()
	gw.Stop()
	if _, err := os.Stat(gw.urlPath); err == nil {
		t.Fatal("the gateway's address is still recorded after Stop")
	}
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the gateway still serves after Stop")
	}
}

// A command's output is searchable once it has finished, through the app
// as it is wired (runner → bus → index → service).
func TestATasksOutputIsFoundOnceItFinishes(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	a, err := openApp(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	tk, err := a.svc.CreateTask(taskrun.CreateRequest{Text: "echo quasar-$((40+2))", Options: taskrun.Options{Cwd: t.TempDir(), Mode: "auto"}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := a.svc.Search(service.SearchQuery{Q: "quasar-42", Kind: search.KindOutput})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 1 && res.Hits[0].Task == tk.ID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task's output was not found: %+v", res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := a.svc.Search(service.SearchQuery{Q: "x", From: "yesterday"}); !errors.Is(err, errcode.ErrInvalid) {
		t.Fatalf("a bad from gave %v; want invalid", err)
	}
}

// A finish is pushed once to a subscribed browser, through the app's own
// parts: the notifier decides, the bus tells, Web Push carries it.
func TestAFinishIsPushedToASubscribedBrowser(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv(PushLoopbackEnv, "1")
	got := make(chan http.Header, 8)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusCreated)
	}))
	defer rc.Close()
	a, err := openApp(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	k, _ := ecdh.P256().GenerateKey(rand.Reader)
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	enc := base64.RawURLEncoding
	if _, err := a.svc.SubscribePush(push.Subscription{Endpoint: rc.URL + "/push/1",
		Keys: push.SubscriptionKeys{P256dh: enc.EncodeToString(k.PublicKey().Bytes()), Auth: enc.EncodeToString(auth)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.svc.CreateTask(taskrun.CreateRequest{Text: "echo pushed", Options: taskrun.Options{Cwd: t.TempDir(), Mode: "auto"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		if h.Get("Topic") != "tasks" || h.Get("Content-Encoding") != "aes128gcm" {
			t.Fatalf("push headers %v", h)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no push came for the finish")
	}
	select {
	case h := <-got:
		t.Fatalf("a second push for one finish: %v", h)
	case <-time.After(500 * time.Millisecond):
	}
}

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
		go func() {
			defer wg.Done()
			codes[i] = call(t, gw, "POST", "/api/routines/"+slow.Routine.ID+"/run", "", nil)
		}()
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
