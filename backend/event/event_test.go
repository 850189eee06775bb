package event

import (
	"testing"
	"time"

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
