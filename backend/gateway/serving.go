package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"conch/backend/event"
	"conch/backend/startstop"
)

// shutdownGrace bounds how long Stop waits for requests in flight.
const shutdownGrace = 5 * time.Second

// Serving is a Server on its listener as a long-lived part: Start serves in
// the background (Failed tells a serve that ended by itself); Stop ends the
// bus's event streams (which Shutdown does not wait for), shuts the server
// down, and then runs Closed. Stop is safe twice and before Start (it then
// closes the listener and runs Closed); Start twice is an error.
type Serving struct {
	srv *Server
	ln  net.Listener
	bus *event.Bus
	// Opened, if set, runs as Start begins (record where it serves); an
	// error refuses the start.
	Opened func() error
	// Closed, if set, runs once Stop has ended the server (remove that
	// record, a socket's file).
	Closed func()
	failed chan error

	mu   sync.Mutex
	life startstop.State
}

// NewServing readies srv on ln, whose streams follow bus.
func NewServing(srv *Server, ln net.Listener, bus *event.Bus) *Serving {
	return &Serving{srv: srv, ln: ln, bus: bus, failed: make(chan error, 1)}
}

// Failed receives the error of a serve that ended by itself.
func (s *Serving) Failed() <-chan error { return s.failed }

func (s *Serving) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.life.Start(ctx); err != nil {
		return fmt.Errorf("start the gateway: %w", err)
	}
	if s.Opened != nil {
		if err := s.Opened(); err != nil {
			return err
		}
	}
	s.life.WG.Add(1)
	go func() {
		defer s.life.WG.Done()
		if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
			s.failed <- err
		}
	}()
	return nil
}

func (s *Serving) Stop() {
	s.mu.Lock()
	closed, started := s.life.Closed(), s.life.Open()
	s.mu.Unlock()
	if closed {
		return
	}
	if started {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		s.bus.Close()
		_ = s.srv.Shutdown(ctx)
	} else if s.ln != nil {
		_ = s.ln.Close()
	}
	s.life.Stop(&s.mu, nil)
	if s.Closed != nil {
		s.Closed()
	}
}
