package chat

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/provider"
	"conch/backend/store"
	"conch/backend/task"
)

// A finished task's result that arrives while a call waits for its result
// is told to the model after the result, never between the two.
func TestHistoryTellsTaskResultsAfterOpenCalls(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bus := event.NewBus()
	defer bus.Close()
	m := New(Config{Store: st, Bus: bus, Home: t.TempDir()})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	c, err := m.Create(CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e, release, _ := m.acquire(c.ID)
	defer release()
	user := m.message(conversation.User)
	user.Text = "look, and tidy in the background"
	call := m.message(conversation.ToolCallKind)
	call.ToolCall = &conversation.ToolCall{ID: "c1", Name: "list_files", Arguments: json.RawMessage(`{}`)}
	news := m.message(conversation.TaskEvent)
	news.TaskEvent = &conversation.TaskUpdate{TaskID: "t1", Status: task.Done, Title: "Tidy", Summary: "Tidied.", Final: true}
	card := m.message(conversation.TaskEvent)
	card.TaskEvent = &conversation.TaskUpdate{TaskID: "t1", Status: task.Running, Title: "Tidy"}
	result := m.message(conversation.ToolResultKind)
	result.ToolResult = &conversation.ToolResult{CallID: "c1", Name: "list_files", Output: "a.txt"}
	if _, err := m.update(e, nil, user, call, card, news, result); err != nil {
		t.Fatal(err)
	}
	h, err := m.history(e)
	if err != nil {
		t.Fatal(err)
	}
	roles := ""
	for _, msg := range h {
		roles += string(msg.Role) + " "
	}
	if roles != "user assistant tool user " {
		t.Fatalf("roles: %q", roles)
	}
	if last := h[3]; last.Role != provider.User || last.Text != "[The background task \"Tidy\" finished. Its result:]\n\nTidied." {
		t.Fatalf("news: %+v", last)
	}
}
