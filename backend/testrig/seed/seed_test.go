package seed

import (
	"path/filepath"
	"testing"
	"time"

	"conch/backend/conversation"
	"conch/backend/store"
	"conch/backend/task"
)

func TestSeedFillsTheStoreWithFinishedTasks(t *testing.T) {
	home := t.TempDir()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if err := Tasks(home, 160, now); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.TaskCounts()
	if err != nil {
		t.Fatal(err)
	}
	// Every 20th stopped (8 of 160), the other multiples of 8 failed (20 - 4).
	if c[task.Stopped] != 8 || c[task.Failed] != 16 || c[task.Done] != 136 {
		t.Fatalf("counts %v", c)
	}
	p, err := st.TasksInGroup(store.GroupFinished, store.TaskFilter{}, "", 1)
	if err != nil || len(p.Tasks) != 1 || !p.Tasks[0].EndedAt.Equal(now) {
		t.Fatalf("newest: %+v %v", p.Tasks, err)
	}
	if a, _ := st.ActiveTasks(); len(a) != 0 {
		t.Fatalf("%d seeded tasks are not finished", len(a))
	}
	// One chat of the person's per ChatsPer tasks, newest first, and a task
	// chat (with its request and reply) for every fourth task.
	chats, err := st.Chats("", "", 100)
	if err != nil || len(chats.Conversations) != 160/ChatsPer || chats.Next != "" {
		t.Fatalf("chats: %d (next %q), %v", len(chats.Conversations), chats.Next, err)
	}
	all, err := st.Conversations()
	if err != nil || len(all) != 160/ChatsPer+40 {
		t.Fatalf("%d conversations, %v", len(all), err)
	}
	withChat := 0
	for _, c := range all {
		if c.Origin.Kind != conversation.FromTask {
			continue
		}
		tk, err := st.Task(c.Origin.TaskID)
		if err != nil || tk.ConversationID != c.ID || tk.ParentConversationID != c.Origin.ParentID {
			t.Fatalf("task chat %s: its task %+v, %v", c.ID, tk, err)
		}
		if msgs, _, err := st.Messages(c.ID, 0, 0); err != nil || len(msgs) != 2 || c.LastSeq != 2 {
			t.Fatalf("task chat %s: %d messages, last seq %d, %v", c.ID, len(msgs), c.LastSeq, err)
		}
		withChat++
		if kids, _ := st.TaskChatsOf(c.Origin.ParentID); len(kids) == 0 {
			t.Fatalf("chat %s lists none of its tasks' chats", c.Origin.ParentID)
		}
	}
	if withChat != 40 {
		t.Fatalf("%d task chats, want 40", withChat)
	}
}
