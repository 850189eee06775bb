package chat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/provider"
	"conch/backend/store"
	"conch/backend/task"
)

var seedTime = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// seeded opens a store holding n task chats sent from one person's chat
// "parent" (in auto mode, so are they) and the chats persons more.
func seeded(t *testing.T, tasks, persons int) *store.Bolt {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	put := func(c conversation.Conversation) {
		if err := st.PutConversation(c); err != nil {
			t.Fatal(err)
		}
	}
	put(conversation.Conversation{ID: "parent", Title: "Parent", Origin: conversation.Origin{Kind: conversation.FromChat}, Mode: task.Auto, Cwd: "/", CreatedAt: seedTime, UpdatedAt: seedTime, Rev: 1})
	for i := 0; i < tasks; i++ {
		at := seedTime.Add(time.Duration(i) * time.Second)
		put(conversation.Conversation{ID: fmt.Sprintf("task-%04d", i), Title: fmt.Sprintf("Task %d", i), Mode: task.Auto, Cwd: "/",
			Origin:    conversation.Origin{Kind: conversation.FromTask, TaskID: fmt.Sprintf("t%d", i), ParentID: "parent"},
			CreatedAt: at, UpdatedAt: at, Rev: 1})
	}
	for i := 0; i < persons; i++ {
		at := seedTime.Add(time.Duration(i) * time.Minute)
		put(conversation.Conversation{ID: fmt.Sprintf("chat-%04d", i), Title: fmt.Sprintf("Chat %d", i), Mode: task.Ask, Cwd: "/",
			Origin: conversation.Origin{Kind: conversation.FromChat}, CreatedAt: at, UpdatedAt: at, Rev: 1})
	}
	return st
}

func started(t *testing.T, st *store.Bolt) *Manager {
	t.Helper()
	bus := event.NewBus()
	t.Cleanup(bus.Close)
	m := New(Config{Store: st, Bus: bus, Home: t.TempDir()})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

func (m *Manager) held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries.Len()
}

// Start reads only what it heals, and using every conversation keeps a
// bounded number of them in memory.
func TestConversationsAreNotHeldInMemory(t *testing.T) {
	st := seeded(t, 1200, 30)
	left := conversation.Conversation{ID: "left-replying", Title: "Left", Origin: conversation.Origin{Kind: conversation.FromChat}, Mode: task.Ask, Cwd: "/",
		Running: true, CreatedAt: seedTime, UpdatedAt: seedTime, Rev: 1}
	if err := st.PutConversation(left); err != nil {
		t.Fatal(err)
	}
	m := started(t, st)
	if n := m.held(); n > 1 {
		t.Fatalf("start-up holds %d conversations; it heals one", n)
	}
	healed, err := m.Get(left.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if healed.Conversation.Running || len(healed.Messages) != 1 || healed.Messages[0].Text != InterruptedNotice {
		t.Fatalf("the chat left replying: %+v, messages %+v", healed.Conversation, healed.Messages)
	}
	most := 0
	for i := 0; i < 1200; i++ {
		c, err := m.Snapshot(fmt.Sprintf("task-%04d", i))
		if err != nil || c.Title != fmt.Sprintf("Task %d", i) {
			t.Fatalf("task chat %d: %+v, %v", i, c, err)
		}
		most = max(most, m.held())
	}
	if most > 2*cacheSize {
		t.Fatalf("reading every conversation held up to %d at once; the cache keeps %d", most, cacheSize)
	}
	var seen []string
	cursor := ""
	for {
		page, err := m.List("", cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Conversations {
			if c.Origin.Kind != conversation.FromChat {
				t.Fatalf("the chat list holds the task chat %s", c.ID)
			}
			seen = append(seen, c.ID)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if len(seen) != 32 || seen[0] != left.ID {
		t.Fatalf("the list gave %d chats, first %v; want 32, the healed one first (changed last)", len(seen), seen[:min(3, len(seen))])
	}
	if _, err := m.List("", "bm90IG9uZQ", 0); err == nil {
		t.Fatal("a cursor the list never gave was taken")
	}
}

// Changes from many goroutines to more conversations than the cache
// keeps all land, also through an entry held (as a turn holds its own)
// while hundreds of others come and go: none is ever made through a
// second copy of a conversation.
func TestChangesThroughTheCacheAllLand(t *testing.T) {
	const chats, writers, each, churn = 700, 8, 30, 50
	st := seeded(t, chats, 0)
	m := started(t, st)
	var mu sync.Mutex
	posted := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			pick := func() string { return fmt.Sprintf("task-%04d", r.IntN(chats)) }
			for i := 0; i < each; i++ {
				id := pick()
				e, release, err := m.acquire(id)
				if err != nil {
					t.Error(err)
					return
				}
				for j := 0; j < churn; j++ {
					_, _ = m.Snapshot(pick())
				}
				// One change by id, one through the entry held all along.
				err = m.PostTaskEvent(id, conversation.TaskUpdate{TaskID: "t", Status: task.Running, Title: "x"})
				if err == nil {
					_, err = m.update(e, nil, m.notice("held"))
				}
				release()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				posted[id] += 2
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for id, n := range posted {
		c, err := st.Conversation(id)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, err := st.Messages(id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.Rev != int64(1+n) || c.LastSeq != uint64(n) || len(msgs) != n {
			t.Fatalf("%s: %d changes made; stored rev %d, last seq %d, %d messages", id, n, c.Rev, c.LastSeq, len(msgs))
		}
	}
	if n := m.held(); n > 2*cacheSize {
		t.Fatalf("%d conversations held after the writers left", n)
	}
}

// Narrowing a chat's mode narrows every one of its tasks' chats, also
// those not in memory.
func TestNarrowingAChatNarrowsAllItsTasks(t *testing.T) {
	st := seeded(t, 600, 0)
	m := started(t, st)
	mode := string(task.Ask)
	if _, err := m.Patch("parent", PatchRequest{Mode: &mode}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600; i++ {
		c, err := st.Conversation(fmt.Sprintf("task-%04d", i))
		if err != nil {
			t.Fatal(err)
		}
		if c.Mode != task.Ask {
			t.Fatalf("task chat %d is still in %s mode", i, c.Mode)
		}
	}
}

// replies answers every call with "ok".
type replies struct{}

func (replies) Info(context.Context) provider.Info {
	return provider.Info{ID: "ok", Name: "OK", Ready: true, CanAsk: true, Category: provider.ChatOnly}
}

func (replies) Stream(context.Context, provider.Request) (<-chan provider.Event, error) {
	ch := make(chan provider.Event, 2)
	ch <- provider.Event{Kind: provider.TextDelta, Text: "ok"}
	ch <- provider.Event{Kind: provider.DoneEvent, StopReason: "end_turn"}
	close(ch)
	return ch, nil
}

// A chat that has replied lets go of its entry: turns do not keep
// conversations in memory.
func TestAReplyLetsGoOfItsChat(t *testing.T) {
	st := seeded(t, 0, 0)
	bus := event.NewBus()
	t.Cleanup(bus.Close)
	m := New(Config{Store: st, Bus: bus, Home: t.TempDir(), Providers: provider.Fixed{"ok": replies{}}})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	var ids []string
	for i := 0; i < 3*cacheSize; i++ {
		c, err := m.Create(CreateRequest{Provider: "ok", Cwd: "/"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Send(c.ID, fmt.Sprintf("hello %d", i)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	for _, id := range ids {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := st.Conversation(id)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still replying", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	m.life.WG.Wait() // every turn has let go
	m.mu.Lock()
	held := 0
	for _, e := range m.entries.All() {
		if e.Held() {
			held++
		}
	}
	m.mu.Unlock()
	if held != 0 {
		t.Fatalf("%d chats are still held after their replies", held)
	}
	// The next change trims the cache back.
	if _, err := m.Create(CreateRequest{Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	if n := m.held(); n > 2*cacheSize {
		t.Fatalf("%d chats in memory after %d replied", n, len(ids))
	}
}
