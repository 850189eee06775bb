package desktop

import (
	"context"
	"sync"
	"testing"
	"time"

	"conch/backend/event"
)

// recorder collects what the bridge emits.
type recorder struct {
	mu   sync.Mutex
	got  []any
	gate chan struct{} // when set, emit waits on it: a page that is slow to take events
}

func (r *recorder) emit(v any) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.got = append(r.got, v)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]any(nil), r.got...)
}

// waitFor polls until cond holds for what was emitted, or fails the test.
func (r *recorder) waitFor(t *testing.T, what string, cond func([]any) bool) []any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if got := r.snapshot(); cond(got) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; emitted %d values", what, len(r.snapshot()))
	return nil
}

// start runs the bridge and returns a function that waits for it to return.
func start(ctx context.Context, bus *event.Bus, r *recorder) (wait func(t *testing.T)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		bridge(ctx, bus, r.emit)
	}()
	return func(t *testing.T) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("bridge did not return")
		}
	}
}

// subscribed waits until the bridge has subscribed, by publishing probes
// until one comes through.
func subscribed(t *testing.T, bus *event.Bus, r *recorder) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(r.snapshot()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("bridge never subscribed")
		}
		bus.Publish(event.Event{Type: event.TaskDeleted, ID: "probe"})
		time.Sleep(2 * time.Millisecond)
	}
}

func TestBridgeForwardsEventsInOrder(t *testing.T) {
	t.Parallel()
	bus := event.NewBus()
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{}
	wait := start(ctx, bus, r)
	subscribed(t, bus, r)
	before := len(r.snapshot())
	for _, id := range []string{"a", "b", "c"} {
		bus.Publish(event.Event{Type: event.TaskDeleted, ID: id})
	}
	got := r.waitFor(t, "three events", func(v []any) bool { return len(v) >= before+3 })
	var ids []string
	for _, v := range got {
		if ev, ok := v.(event.Event); ok && ev.ID != "probe" {
			ids = append(ids, ev.ID)
		}
	}
	if len(ids) != 3 || ids[0] != "a" || ids[1] != "b" || ids[2] != "c" {
		t.Fatalf("got ids %v, want [a b c]", ids)
	}
	cancel()
	wait(t)
}

func TestBridgeReloadsAfterBeingDropped(t *testing.T) {
	t.Parallel()
	bus := event.NewBus()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &recorder{gate: make(chan struct{})}
	wait := start(ctx, bus, r)
	// The first event blocks the bridge inside emit, so the burst overflows
	// its buffer and the bus drops it.
	go func() { r.gate <- struct{}{} }()
	deadline := time.Now().Add(5 * time.Second)
	for len(r.snapshot()) == 0 && time.Now().Before(deadline) {
		bus.Publish(event.Event{Type: event.TaskDeleted, ID: "first"})
		time.Sleep(2 * time.Millisecond)
	}
	for i := 0; i < 2*bridgeBuffer; i++ {
		bus.Publish(event.Event{Type: event.TaskDeleted, ID: "burst"})
	}
	close(r.gate)
	r.waitFor(t, "a reload", func(v []any) bool {
		for _, x := range v {
			if m, ok := x.(map[string]string); ok && m["type"] == "reload" {
				return true
			}
		}
		return false
	})
	// After the reload the bridge is subscribed again and forwards new events.
	bus.Publish(event.Event{Type: event.TaskDeleted, ID: "after"})
	r.waitFor(t, "the event after the reload", func(v []any) bool {
		ev, ok := v[len(v)-1].(event.Event)
		return ok && ev.ID == "after"
	})
	cancel()
	wait(t)
}

func TestBridgeStopsWhenTheBusCloses(t *testing.T) {
	t.Parallel()
	bus := event.NewBus()
	r := &recorder{}
	wait := start(context.Background(), bus, r)
	subscribed(t, bus, r)
	bus.Close()
	wait(t)
	for _, v := range r.snapshot() {
		if _, ok := v.(map[string]string); ok {
			t.Fatalf("emitted %v when the bus closed; want no reload", v)
		}
	}
}
