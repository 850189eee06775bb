package integration

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"conch/backend/conversation"
	"conch/backend/store"
	"conch/backend/task"
)

// Chat tasks still queued when Conch was killed run after the restart, and
// finish. (They once failed at once, "conversation …: no such
// conversation": the runner dispatched them at start before the chats
// were loaded.)
func TestChatTasksQueuedAtAKillRunAfterTheRestart(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	model := startModel(t, 1)
	s := start(t, home)
	body := fmt.Sprintf(`{"kind":"openai","name":"Scripted","baseUrl":%q,"model":%q}`, model.base, scriptedModel)
	if code := s.call(t, "PUT", "/api/providers/scripted", body, nil); code != 200 {
		t.Fatalf("connect the scripted model: %d", code)
	}
	if code := s.call(t, "PATCH", "/api/preferences", `{"limits":{"background":1}}`, nil); code != 200 {
		t.Fatalf("limit the background tasks: %d", code)
	}
	// One command holds the only slot, so the chat tasks wait behind it.
	busy := s.create(t, "sleep 300", dir)
	s.waitTask(t, busy.ID, func(t task.Task) bool { return t.Status == task.Running })
	var c conversation.Conversation
	if code := s.call(t, "POST", "/api/conversations", fmt.Sprintf(`{"provider":"scripted","mode":"auto","cwd":%q}`, dir), &c); code != 201 {
		t.Fatalf("make a chat: %d", code)
	}
	const n = 8
	var ids []string
	for i := range n {
		var tk task.Task
		req := fmt.Sprintf(`{"text":"Write the file and count. [crash-q-%d]","conversationId":%q}`, i, c.ID)
		if code := s.call(t, "POST", "/api/tasks", req, &tk); code != 201 || tk.Status != task.Queued {
			t.Fatalf("send task %d away: %d %s", i, code, tk.Status)
		}
		ids = append(ids, tk.ID)
	}
	s.kill9(t)

	// Room for all of them at once after the restart: each run starts as
	// Conch does.
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	prefs, err := st.Preferences()
	if err != nil {
		t.Fatal(err)
	}
	prefs.Limits.Background = n + 1
	if err := st.PutPreferences(prefs); err != nil {
		t.Fatal(err)
	}
	// A home that has been used a while: many chats to load at start.
	pad(t, st, 3000, dir)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	s = start(t, home)
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		tk := s.waitTask(t, id, func(t task.Task) bool { return t.Status.Finished() || time.Now().After(deadline) })
		if tk.Status != task.Done {
			t.Errorf("queued task %s after the restart: %s %q", id, tk.Status, tk.Error)
		}
	}
}

// pad stores n chats of the person's, the way Conch stores them.
func pad(t *testing.T, st *store.Bolt, n int, dir string) {
	t.Helper()
	now := time.Now().UTC()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 32 { // concurrent puts share commits
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c := conversation.Conversation{ID: uuid.NewString(), Title: fmt.Sprintf("chat %d", i),
					Origin: conversation.Origin{Kind: conversation.FromChat}, Mode: task.Ask, Cwd: dir,
					CreatedAt: now, UpdatedAt: now, Rev: 1}
				if err := st.PutConversation(c); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}
