package startstop

import (
	"context"
	"fmt"
	"sync"
)

// Service is a long-lived part: Start it once (a second Start is an
// error), Stop it once; Stop is safe twice and before Start, and ends what
// Start began.
type Service interface {
	Start(ctx context.Context) error
	Stop()
}

// Part is a service in a Group, named for the error a failed start gives.
// An Optional part is one the app runs without (the tray, the global
// shortcut): its failed Start is kept (Problem) and the others go on.
type Part struct {
	Name string
	Service
	Optional bool
}

// Opened is a part its constructor opened already, because the parts made
// after it need it before anything starts (the store, a bus connection):
// Start only keeps the promise; Stop closes it.
func Opened(name string, close func() error) Part {
	return Part{Name: name, Service: &opened{close: close}}
}

type opened struct {
	mu    sync.Mutex
	state State
	close func() error
	once  sync.Once
}

func (o *opened) Start(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, err := o.state.Start(ctx)
	return err
}

func (o *opened) Stop() {
	o.state.Stop(&o.mu, nil)
	o.once.Do(func() { _ = o.close() })
}

// Group starts its parts in the order given and stops them in reverse, so
// each part starts after what it needs and stops before it.
type Group struct {
	mu       sync.Mutex
	state    State
	parts    []Part
	problems map[string]error // optional parts that did not start, by name
}

// NewGroup returns a group of parts, none started.
func NewGroup(parts ...Part) *Group { return &Group{parts: parts} }

// Start starts every part in order. If one fails, those started are
// stopped in reverse and the error names the part. A second Start, or one
// after Stop, is ErrStarted.
func (g *Group) Start(ctx context.Context) error {
	g.mu.Lock()
	if _, err := g.state.Start(ctx); err != nil {
		g.mu.Unlock()
		return err
	}
	g.mu.Unlock()
	for _, p := range g.parts {
		err := p.Start(ctx)
		switch {
		case err != nil && p.Optional:
			g.mu.Lock()
			if g.problems == nil {
				g.problems = map[string]error{}
			}
			g.problems[p.Name] = err
			g.mu.Unlock()
		case err != nil:
			g.Stop()
			return fmt.Errorf("start %s: %w", p.Name, err)
		}
	}
	return nil
}

// Problem is why the optional part name did not start, or nil.
func (g *Group) Problem(name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.problems[name]
}

// Stop stops every part in reverse order, the ones never started too (a
// part's Stop is safe before its Start: it releases what its constructor
// took). Safe twice and before Start.
func (g *Group) Stop() {
	g.mu.Lock()
	if g.state.Closed() {
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	g.state.Stop(&g.mu, nil)
	for i := len(g.parts) - 1; i >= 0; i-- {
		g.parts[i].Stop()
	}
}

// Parts are the group's parts in start order.
func (g *Group) Parts() []Part { return append([]Part(nil), g.parts...) }

// Names are the parts' names in start order.
func (g *Group) Names() []string {
	names := make([]string, len(g.parts))
	for i, p := range g.parts {
		names[i] = p.Name
	}
	return names
}
