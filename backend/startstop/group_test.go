package startstop_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"conch/backend/startstop"
)

// recorder is a part that notes its starts and stops in a shared log.
type recorder struct {
	name string
	log  *[]string
	mu   *sync.Mutex
	fail error
}

func (r recorder) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.log = append(*r.log, "start "+r.name)
	return r.fail
}

func (r recorder) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.log = append(*r.log, "stop "+r.name)
}

func group(log *[]string, failAt string) *startstop.Group {
	var mu sync.Mutex
	var parts []startstop.Part
	for _, n := range []string{"store", "chats", "runner"} {
		r := recorder{name: n, log: log, mu: &mu}
		if n == failAt {
			r.fail = errors.New("broken")
		}
		parts = append(parts, startstop.Part{Name: n, Service: r})
	}
	return startstop.NewGroup(parts...)
}

func TestAGroupStartsInOrderAndStopsInReverse(t *testing.T) {
	var log []string
	g := group(&log, "")
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Stop()
	g.Stop()
	want := []string{"start store", "start chats", "start runner", "stop runner", "stop chats", "stop store"}
	if !slices.Equal(log, want) {
		t.Fatalf("log %q; want %q", log, want)
	}
	if err := g.Start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("Start after Stop gave %v; want ErrStarted", err)
	}
}

func TestAGroupThatFailsToStartStopsEveryPartInReverse(t *testing.T) {
	var log []string
	g := group(&log, "chats")
	err := g.Start(context.Background())
	if err == nil || err.Error() != "start chats: broken" {
		t.Fatalf("Start gave %v; want the part's name and its error", err)
	}
	want := []string{"start store", "start chats", "stop runner", "stop chats", "stop store"}
	if !slices.Equal(log, want) {
		t.Fatalf("log %q; want %q", log, want)
	}
}

func TestAnOpenedPartClosesOnceAndStartsOnce(t *testing.T) {
	closed := 0
	p := startstop.Opened("store", func() error { closed++; return nil })
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("second Start gave %v; want ErrStarted", err)
	}
	p.Stop()
	p.Stop()
	if closed != 1 {
		t.Fatalf("closed %d times; want once", closed)
	}
	q := startstop.Opened("bus", func() error { closed++; return nil })
	q.Stop() // before Start: still closes what the constructor opened
	if closed != 2 {
		t.Fatalf("a Stop before Start did not close it")
	}
}

func TestAnOptionalPartThatFailsLeavesTheOthersRunning(t *testing.T) {
	var log []string
	var mu sync.Mutex
	g := startstop.NewGroup(
		startstop.Part{Name: "store", Service: recorder{name: "store", log: &log, mu: &mu}},
		startstop.Part{Name: "tray", Service: recorder{name: "tray", log: &log, mu: &mu, fail: errors.New("no tray host")}, Optional: true},
		startstop.Part{Name: "shortcut", Service: recorder{name: "shortcut", log: &log, mu: &mu}},
	)
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("an optional part's failure stopped the start: %v", err)
	}
	if err := g.Problem("tray"); err == nil || err.Error() != "no tray host" {
		t.Fatalf("Problem(tray) = %v", err)
	}
	if err := g.Problem("shortcut"); err != nil {
		t.Fatalf("Problem(shortcut) = %v; it started", err)
	}
	g.Stop()
	want := []string{"start store", "start tray", "start shortcut", "stop shortcut", "stop tray", "stop store"}
	if !slices.Equal(log, want) {
		t.Fatalf("log %q; want %q", log, want)
	}
}
