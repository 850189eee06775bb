package registry_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/provider/registry"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/chatcompletions"
)

// TestChatThroughRegistry connects an OpenAI-compatible server with PUT
// and has a chat manager, reading providers from the registry, run a turn
// against it: the streamed reply is stored.
func TestChatThroughRegistry(t *testing.T) {
	srv := chatcompletions.New(t, func(modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Hello from the registry."}
	}, chatcompletions.Models("test-model"))

	b := setup(t)
	r := open(t, b.cfg)
	key := "sk-chat-test-0042"
	l, err := r.Put(context.Background(), "local", registry.PutRequest{Kind: "openai", Name: "Local", BaseURL: srv.BaseURL(), APIKey: &key})
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
	var auth []string
	for _, r := range srv.Requests() {
		auth = append(auth, r.Header.Get("Authorization"))
	}
	for _, a := range auth {
		if a != "Bearer "+key {
			t.Errorf("the server got Authorization %q, want the stored key", a)
		}
	}
	if !strings.HasPrefix(strings.Join(auth, ""), "Bearer") {
		t.Error("the server was never called")
	}
}
