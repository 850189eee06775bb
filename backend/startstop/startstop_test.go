package startstop_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"conch/backend/startstop"
)

// service is the shape a user has: its own lock guarding the state.
type service struct {
	mu   sync.Mutex
	life startstop.State
}

func (s *service) start(ctx context.Context) (context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.life.Start(ctx)
}

func TestStopIsSafeBeforeStartAndTwice(t *testing.T) {
	var s service
	s.life.Stop(&s.mu, nil)
	s.life.Stop(&s.mu, nil)
	if _, err := s.start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("Start after Stop gave %v; want ErrStarted", err)
	}
}

func TestStartTwiceIsAnError(t *testing.T) {
	var s service
	if _, err := s.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("a second Start gave %v; want ErrStarted", err)
	}
	s.life.Stop(&s.mu, nil)
}

type key struct{}

func TestStopEndsTheWorkWithItsCauseAndWaitsForIt(t *testing.T) {
	var s service
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	ctx, err := s.start(parent)
	if err != nil {
		t.Fatal(err)
	}
	cancelParent()
	if ctx.Err() != nil || ctx.Value(key{}) != "v" {
		t.Fatal("the work's context ended with Start's, or lost its values")
	}
	s.mu.Lock()
	open := s.life.Open()
	if s.life.Context() != ctx {
		t.Error("Context is not the one Start returned")
	}
	var ended atomic.Int32
	for range 4 {
		s.life.WG.Add(1)
		go func() {
			defer s.life.WG.Done()
			<-ctx.Done()
			ended.Add(1)
		}()
	}
	s.mu.Unlock()
	if !open {
		t.Fatal("a started service is not open")
	}
	why := errors.New("closing")
	s.life.Stop(&s.mu, why)
	if n := ended.Load(); n != 4 {
		t.Fatalf("Stop returned with %d of 4 goroutines ended", n)
	}
	if !errors.Is(context.Cause(ctx), why) {
		t.Fatalf("the work ended with %v; want Stop's cause", context.Cause(ctx))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life.Open() || !s.life.Closed() {
		t.Fatal("a stopped service says it is open")
	}
}
