package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/provider"
	"conch/backend/service"
	"conch/backend/store"
)

// twoStep is the model edge: its first call asks to write a file, every
// later one says "Done." It can also block until stopped.
type twoStep struct {
	mu    sync.Mutex
	n     int
	block bool
}

func (p *twoStep) Info(context.Context) provider.Info {
	return provider.Info{ID: "fake", Name: "Fake", Ready: true, Category: provider.ChatOnly, CanAsk: true}
}

func (p *twoStep) Stream(ctx context.Context, _ provider.Request) (<-chan provider.Event, error) {
	p.mu.Lock()
	p.n++
	n, block := p.n, p.block
	p.mu.Unlock()
	ch := make(chan provider.Event, 4)
	go func() {
		defer close(ch)
		switch {
		case block:
			<-ctx.Done()
			ch <- provider.Event{Kind: provider.ErrorEvent, Err: ctx.Err()}
			return
		case n == 1:
			ch <- provider.Event{Kind: provider.ToolCallEvent, Call: &provider.ToolCall{ID: "w", Name: "write_file", Arguments: json.RawMessage(`{"path":"a.txt","content":"hi"}`)}}
		default:
			ch <- provider.Event{Kind: provider.TextDelta, Text: "Done."}
		}
		ch <- provider.Event{Kind: provider.DoneEvent}
	}()
	return ch, nil
}

// setupChats starts a gateway whose chats answer with p, working in dir.
func setupChats(t testing.TB, p provider.Provider) (*env, string) {
	t.Helper()
	home, dir := t.TempDir(), t.TempDir()
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	m := chat.New(chat.Config{Store: st, Bus: bus, Providers: provider.Fixed{"fake": p}, Home: dir})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	gw, err := gateway.New(gateway.Config{API: service.New(service.Config{Chats: m}), Bus: bus, Token: token}, srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = gw
	srv.Start()
	t.Cleanup(func() {
		bus.Close()
		srv.Close()
		m.Stop()
		_ = st.Close()
	})
	return &env{srv: srv, base: srv.URL, dir: dir, bus: bus}, dir
}

func decodeAs[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func (e *env) conversation(t *testing.T, id, query string) chat.Page {
	t.Helper()
	resp, b := e.do(t, req{method: "GET", path: "/api/conversations/" + id + query})
	if resp.StatusCode != 200 {
		t.Fatalf("get conversation: %d %s", resp.StatusCode, b)
	}
	return decodeAs[chat.Page](t, b)
}

func (e *env) waitConversation(t *testing.T, id string, ok func(conversation.Conversation) bool) chat.Page {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := e.conversation(t, id, "")
		if ok(p.Conversation) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("conversation never got there: %+v", p.Conversation)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConversationOverHTTP(t *testing.T) {
	e, dir := setupChats(t, &twoStep{})
	resp, b := e.do(t, req{method: "POST", path: "/api/conversations", body: `{"provider":"fake","mode":"ask","cwd":"` + dir + `"}`})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	c := decodeAs[conversation.Conversation](t, b)
	if c.Mode != "ask" || c.Origin.Kind != conversation.FromChat || c.Cwd != dir {
		t.Errorf("created %+v", c)
	}

	resp, b = e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/messages", body: `{"text":"write a file"}`})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("send: %d %s", resp.StatusCode, b)
	}
	if m := decodeAs[conversation.Message](t, b); m.Kind != conversation.User || m.Seq != 1 || m.Text != "write a file" {
		t.Errorf("sent %+v", m)
	}
	p := e.waitConversation(t, c.ID, func(c conversation.Conversation) bool { return c.Ask != nil })
	askID := p.Conversation.Ask.ID

	resp, b = e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/asks/" + askID, body: `{}`})
	wantError(t, resp, b, 400, "invalid")
	resp, b = e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/asks/" + askID, body: `{"allow":true}`})
	if resp.StatusCode != 200 {
		t.Fatalf("answer: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/asks/" + askID, body: `{"allow":false}`})
	wantError(t, resp, b, 409, "conflict")

	p = e.waitConversation(t, c.ID, func(c conversation.Conversation) bool { return !c.Running })
	if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "hi" {
		t.Errorf("a.txt = %q", got)
	}
	var ks []string
	for _, m := range p.Messages {
		ks = append(ks, string(m.Kind))
	}
	if strings.Join(ks, " ") != "user tool-call ask ask tool-result assistant" {
		t.Errorf("messages: %v", ks)
	}
	p = e.conversation(t, c.ID, "?before=3&limit=1")
	if len(p.Messages) != 1 || p.Messages[0].Seq != 2 || !p.More {
		t.Errorf("page before 3: %+v", p)
	}

	resp, b = e.do(t, req{method: "PATCH", path: "/api/conversations/" + c.ID, body: `{"title":"Renamed","mode":"plan","limit":1.5}`})
	if resp.StatusCode != 200 {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	if pc := decodeAs[conversation.Conversation](t, b); pc.Title != "Renamed" || pc.Mode != "plan" || pc.Limit != 1.5 {
		t.Errorf("patched %+v", pc)
	}
	resp, b = e.do(t, req{method: "GET", path: "/api/conversations"})
	list := decodeAs[struct {
		Conversations []conversation.Conversation `json:"conversations"`
	}](t, b)
	if resp.StatusCode != 200 || len(list.Conversations) != 1 || list.Conversations[0].Title != "Renamed" {
		t.Errorf("list: %d %s", resp.StatusCode, b)
	}
}

func TestStopConversationOverHTTP(t *testing.T) {
	e, dir := setupChats(t, &twoStep{block: true})
	_, b := e.do(t, req{method: "POST", path: "/api/conversations", body: `{"provider":"fake","cwd":"` + dir + `"}`})
	c := decodeAs[conversation.Conversation](t, b)
	e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/messages", body: `{"text":"think"}`})
	resp, b := e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/messages", body: `{"text":"again"}`})
	wantError(t, resp, b, 409, "conflict")
	start := time.Now()
	resp, b = e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/stop"})
	if resp.StatusCode != 200 || decodeAs[conversation.Conversation](t, b).Running || time.Since(start) > time.Second {
		t.Fatalf("stop: %d %s after %s", resp.StatusCode, b, time.Since(start))
	}
	resp, b = e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/stop"})
	wantError(t, resp, b, 409, "conflict")
}

func TestConversationBadInput(t *testing.T) {
	e, dir := setupChats(t, &twoStep{})
	_, b := e.do(t, req{method: "POST", path: "/api/conversations", body: `{"cwd":"` + dir + `"}`})
	id := decodeAs[conversation.Conversation](t, b).ID
	base := "/api/conversations/" + id
	for _, tc := range []struct {
		r      req
		status int
		code   string
	}{
		{req{method: "POST", path: "/api/conversations", body: `{"mode":"yolo"}`}, 400, "invalid"},
		{req{method: "POST", path: "/api/conversations", body: `{"provider":"nope"}`}, 400, "invalid"},
		{req{method: "POST", path: "/api/conversations", body: `{"cwd":"relative/dir"}`}, 400, "invalid"},
		{req{method: "POST", path: "/api/conversations", body: `{"cwd":"/does/not/exist"}`}, 400, "invalid"},
		{req{method: "POST", path: "/api/conversations", body: `{"limit":-1}`}, 400, "invalid"},
		{req{method: "POST", path: "/api/conversations", body: `{"limit":"lots"}`}, 400, "bad_json"},
		{req{method: "POST", path: "/api/conversations", body: `{"bogus":1}`}, 400, "unknown_field"},
		{req{method: "POST", path: "/api/conversations", body: `{`}, 400, "bad_json"},
		{req{method: "POST", path: "/api/conversations", body: `{}{}`}, 400, "bad_json"},
		{req{method: "POST", path: "/api/conversations", body: `{}`, contentType: "text/plain"}, 415, "not_json"},
		{req{method: "POST", path: "/api/conversations", body: `{"title":"` + strings.Repeat("x", 2<<20) + `"}`}, 413, "too_large"},
		{req{method: "DELETE", path: "/api/conversations"}, 405, "method_not_allowed"},
		{req{method: "GET", path: "/api/conversations/nope"}, 404, "not_found"},
		{req{method: "GET", path: base + "?before=x"}, 400, "invalid"},
		{req{method: "GET", path: base + "?before=-1"}, 400, "invalid"},
		{req{method: "GET", path: base + "?limit=0"}, 400, "invalid"},
		{req{method: "GET", path: base + "?limit=501"}, 400, "invalid"},
		{req{method: "DELETE", path: base}, 405, "method_not_allowed"},
		{req{method: "PATCH", path: base, body: `{"mode":"yolo"}`}, 400, "invalid"},
		{req{method: "PATCH", path: base, body: `{"tainted":true}`}, 400, "invalid"},
		{req{method: "PATCH", path: base, body: `{"provider":"nope"}`}, 400, "invalid"},
		{req{method: "PATCH", path: base, body: `{"title":5}`}, 400, "bad_json"},
		{req{method: "PATCH", path: "/api/conversations/nope", body: `{"title":"x"}`}, 404, "not_found"},
		{req{method: "POST", path: base + "/messages", body: `{"text":"  "}`}, 400, "invalid"},
		{req{method: "POST", path: base + "/messages", body: `{}`}, 400, "invalid"},
		{req{method: "POST", path: base + "/messages", body: `{"text":"hi"}`, contentType: "text/plain"}, 415, "not_json"},
		{req{method: "POST", path: "/api/conversations/nope/messages", body: `{"text":"hi"}`}, 404, "not_found"},
		{req{method: "GET", path: base + "/messages"}, 405, "method_not_allowed"},
		{req{method: "POST", path: base + "/stop", body: `{"now":true}`}, 400, "invalid"},
		{req{method: "POST", path: base + "/stop"}, 409, "conflict"},
		{req{method: "POST", path: "/api/conversations/nope/stop"}, 404, "not_found"},
		{req{method: "POST", path: base + "/asks/q1", body: `{"allow":true}`}, 409, "conflict"},
		{req{method: "POST", path: base + "/asks/q1", body: `{"allow":"yes"}`}, 400, "bad_json"},
		{req{method: "POST", path: base + "/asks/", body: `{"allow":true}`}, 404, "not_found"},
		{req{method: "POST", path: base + "/nonsense"}, 404, "not_found"},
		{req{method: "GET", path: base, noToken: true}, 401, "unauthorized"},
	} {
		resp, b := e.do(t, tc.r)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s %.60s: %d %s, want %d", tc.r.method, tc.r.path, tc.r.body, resp.StatusCode, b, tc.status)
			continue
		}
		wantError(t, resp, b, tc.status, tc.code)
	}
}

func TestWebSocketStreamsAChat(t *testing.T) {
	e, dir := setupChats(t, &twoStep{n: 1}) // past the tool call: it answers "Done."
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL(e), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	_, b := e.do(t, req{method: "POST", path: "/api/conversations", body: `{"provider":"fake","cwd":"` + dir + `"}`})
	c := decodeAs[conversation.Conversation](t, b)
	e.do(t, req{method: "POST", path: "/api/conversations/" + c.ID + "/messages", body: `{"text":"hi"}`})
	var seen []string
	streamed := ""
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (saw %v)", err, seen)
		}
		var ev event.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, string(ev.Type))
		switch ev.Type {
		case event.MessageDelta:
			streamed += ev.Delta.Text
		case event.MessageAdded:
			if ev.Message.Kind == conversation.Assistant && ev.Message.Text != streamed {
				t.Errorf("streamed %q, stored %q", streamed, ev.Message.Text)
			}
		case event.ConversationChanged:
			if ev.Conversation.ID != c.ID {
				t.Fatalf("event %s", b)
			}
			if !ev.Conversation.Running && ev.Conversation.LastSeq > 1 {
				if streamed != "Done." {
					t.Errorf("streamed %q; events %v", streamed, seen)
				}
				return
			}
		}
	}
}

// The chat list comes a page at a time, newest first, each chat once, a
// search by title narrows it, and what it cannot mean is a 400.
func TestTheChatListPages(t *testing.T) {
	e, dir := setupChats(t, &twoStep{})
	var made []string
	for i := range 25 {
		title := fmt.Sprintf("Chat %d", i)
		if i%5 == 0 {
			title = fmt.Sprintf("Deploy plan %d", i)
		}
		resp, b := e.do(t, req{method: "POST", path: "/api/conversations", body: fmt.Sprintf(`{"cwd":%q,"title":%q}`, dir, title)})
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d %s", resp.StatusCode, b)
		}
		made = append(made, decodeAs[conversation.Conversation](t, b).ID)
	}
	page := func(query string) service.ConversationList {
		t.Helper()
		resp, b := e.do(t, req{method: "GET", path: "/api/conversations" + query})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/conversations%s: %d %s", query, resp.StatusCode, b)
		}
		return decodeAs[service.ConversationList](t, b)
	}
	var got []string
	cursor := ""
	for {
		l := page("?limit=10&cursor=" + url.QueryEscape(cursor))
		if len(l.Conversations) > 10 {
			t.Fatalf("a page of 10 holds %d", len(l.Conversations))
		}
		for _, c := range l.Conversations {
			got = append(got, c.ID)
		}
		if cursor = l.Next; cursor == "" {
			break
		}
	}
	want := slices.Clone(made)
	slices.Reverse(want) // made a moment apart: the last made changed last
	if !slices.Equal(got, want) {
		t.Fatalf("pages gave %v\nwant %v", got, want)
	}
	found := page("?q=deploy+PLAN")
	if len(found.Conversations) != 5 || found.Next != "" {
		t.Fatalf("q=deploy plan found %d (next %q), want the 5 titled so", len(found.Conversations), found.Next)
	}
	for _, q := range []string{"?limit=0", "?limit=501", "?limit=x", "?cursor=%%%", "?cursor=bm90LWEtY3Vyc29y", "?sort=title",
		"?q=" + url.QueryEscape(strings.Repeat("x", 201))} {
		resp, b := e.do(t, req{method: "GET", path: "/api/conversations" + q})
		wantError(t, resp, b, http.StatusBadRequest, "invalid")
	}
}

// FuzzChatListQuery sends arbitrary query strings to GET
// /api/conversations: every answer is a 200 with a page or a 400 with a
// JSON error, never a 500 or a panic.
func FuzzChatListQuery(f *testing.F) {
	for _, s := range []string{"", "limit=3", "q=plan", "cursor=Yw", "cursor=%%%", "limit=99999999999999999999", "q=%00"} {
		f.Add(s)
	}
	e, dir := setupChats(f, &twoStep{})
	for i := range 6 {
		e.do(f, req{method: "POST", path: "/api/conversations", body: fmt.Sprintf(`{"cwd":%q,"title":"plan %d"}`, dir, i)})
	}
	f.Fuzz(func(t *testing.T, query string) {
		resp, b := e.do(t, req{method: "GET", path: "/api/conversations?" + url.PathEscape(query)})
		switch resp.StatusCode {
		case http.StatusOK:
			l := decodeAs[service.ConversationList](t, b)
			if len(l.Conversations) > chat.ListMax {
				t.Fatalf("%d chats in one page", len(l.Conversations))
			}
		case http.StatusBadRequest:
			wantError(t, resp, b, http.StatusBadRequest, "invalid")
		default:
			t.Fatalf("status %d for %q: %s", resp.StatusCode, query, b)
		}
	})
}
