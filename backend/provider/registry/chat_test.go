package registry_test

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
	"conch/backend/output"
	"conch/backend/provider/registry"
)

// TestChatThroughRegistry connects an OpenAI-compatible server with PUT
// and has a chat manager, reading providers from the registry, run a turn
// against it: the streamed reply is stored.
func TestChatThroughRegistry(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"data":[{"id":"test-model","object":"model"}]}`)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			for _, chunk := range []string{
				`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" from the registry."},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
				`{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`,
				`[DONE]`,
			} {
				fmt.Fprintf(w, "data: %s\n\n", chunk)
				w.(http.Flusher).Flush()
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	b := setup(t)
	r := open(t, b.cfg)
	key := "sk-chat-test-0042"
	l, err := r.Put(context.Background(), "local", registry.PutRequest{Kind: "openai", Name: "Local", BaseURL: srv.URL + "/v1", APIKey: &key})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Ready || l.Models.Default != "test-model" {
		t.Fatalf("listing = %+v, want ready with the server's model", l)
	}

	bus := event.NewBus()
	defer bus.Close()
	home := t.TempDir()
	m := chat.New(chat.Config{Store: b.st, Bus: bus, Providers: r, Home: home, Logs: output.New(filepath.Join(home, "chats"))})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	c, err := m.Create(chat.CreateRequest{Provider: "local", Mode: "plan", Cwd: home})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Send(c.ID, "Say hello."); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := m.Get(c.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Conversation.Running && len(p.Messages) > 1 {
			var reply string
			for _, msg := range p.Messages {
				if msg.Kind == conversation.Assistant {
					reply += msg.Text
				}
			}
			if reply != "Hello from the registry." {
				t.Fatalf("stored reply = %q; messages %+v", reply, p.Messages)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not end: %+v", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range auth {
		if a != "Bearer "+key {
			t.Errorf("the server got Authorization %q, want the stored key", a)
		}
	}
	if !strings.HasPrefix(strings.Join(auth, ""), "Bearer") {
		t.Error("the server was never called")
	}
}
