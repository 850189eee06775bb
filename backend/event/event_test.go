package event

import (
	"encoding/json"
	"testing"
	"time"

	"conch/backend/conversation"
	"conch/backend/task"
)

func TestPublishDeliversInOrder(t *testing.T) {
	b := NewBus()
	s := b.Subscribe(4)
	defer s.Close()
	for i := 0; i < 3; i++ {
		b.Publish(Event{Type: TaskChanged, Task: &task.Task{Rev: int64(i)}})
	}
	for i := 0; i < 3; i++ {
		e := <-s.C()
		if e.Task.Rev != int64(i) {
			t.Fatalf("event %d has rev %d", i, e.Task.Rev)
		}
	}
}

func TestSlowSubscriberIsDroppedNotWaitedOn(t *testing.T) {
	b := NewBus()
	slow := b.Subscribe(1)
	fast := b.Subscribe(100)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 50; i++ {
			b.Publish(Event{Type: TaskDeleted, ID: "x"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("publish blocked on a slow subscriber")
	}
	select {
	case <-slow.Done():
	default:
		t.Fatal("slow subscriber was not dropped")
	}
	select {
	case <-fast.Done():
		t.Fatal("fast subscriber was dropped")
	default:
	}
	if n := len(fast.C()); n != 50 {
		t.Fatalf("fast subscriber got %d events, want 50", n)
	}
}

func TestCloseEndsSubscriptions(t *testing.T) {
	b := NewBus()
	s := b.Subscribe(1)
	s.Close()
	s.Close()
	<-s.Done()
	s2 := b.Subscribe(1)
	b.Close()
	<-s2.Done()
	<-b.Subscribe(1).Done()
	b.Publish(Event{Type: TaskDeleted}) // no subscribers, must not panic
}

func TestChatEventShapes(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{Type: MessageDelta, Delta: &Delta{ConversationID: "c", MessageID: "m", Text: "Hel"}},
			`{"type":"message.delta","delta":{"conversationId":"c","messageId":"m","text":"Hel"}}`},
		{Event{Type: MessageAdded, Message: &conversation.Message{ID: "m", ConversationID: "c", Seq: 3, Kind: conversation.Notice, Text: "Stopped.", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
			`{"type":"message.added","message":{"id":"m","conversationId":"c","seq":3,"kind":"notice","text":"Stopped.","createdAt":"2026-01-02T03:04:05Z"}}`},
	} {
		b, err := json.Marshal(tc.e)
		if err != nil || string(b) != tc.want {
			t.Errorf("got %s (%v)\nwant %s", b, err, tc.want)
		}
	}
}
