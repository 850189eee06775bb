//go:build desktop

package desktop

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/wailsapp/wails/v2/pkg/runtime"

	"conch/backend/doctor"
	"conch/backend/event"
	"conch/backend/shortcut"
	"conch/backend/startstop"
	"conch/backend/tray"
)

// extras starts the window's own parts beside it, in one list: the tray's
// host watcher, the tray icon and the global shortcut, each one Conch runs
// without, and reports how they came up. They stop in reverse when ctx
// ends.
func (w *window) extras(ctx, wailsCtx context.Context) {
	bringForward := func() {
		runtime.WindowUnminimise(wailsCtx)
		runtime.Show(wailsCtx)
	}
	publish := func(e event.Event) {
		if w.o.Events != nil {
			w.o.Events.Publish(e)
		}
	}
	host := &hostPart{}
	var parts []startstop.Part
	if w.o.Tasks != nil {
		icon := &trayPart{w: w, actions: tray.Actions{
			Open:     bringForward,
			Tasks:    func() { bringForward(); publish(event.Event{Type: event.Open}) },
			OpenTask: func(id string) { bringForward(); publish(event.Event{Type: event.Open, ID: id}) },
			OpenChat: func(id string) { bringForward(); publish(event.Event{Type: event.OpenChat, ID: id}) },
			Answer:   w.o.answer,
			Log:      slog.Default(),
			Quit:     func() { runtime.Quit(wailsCtx) },
		}}
		parts = append(parts,
			startstop.Part{Name: "tray host", Service: host, Optional: true},
			startstop.Part{Name: "tray", Service: icon, Optional: true})
	}
	keys := &shortcutPart{onPress: func() {
		bringForward()
		publish(event.Event{Type: event.Compose})
	}}
	parts = append(parts, startstop.Part{Name: "shortcut", Service: keys, Optional: true})
	g := startstop.NewGroup(parts...)
	_ = g.Start(ctx) // every part is optional: each says how it stands
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		<-ctx.Done()
		g.Stop()
	}()
	if w.o.OnReady != nil {
		w.o.OnReady(trayState(w.o.Tasks != nil, g, host), shortcutState(g.Problem("shortcut")), bringForward)
	}
}

// trayState is how the tray stands for the doctor, asked each time: a
// tray host on the session bus may come after Conch, as at login.
func trayState(shown bool, g *startstop.Group, host *hostPart) func() doctor.Feature {
	if !shown {
		return func() doctor.Feature { return doctor.Feature{Running: true} }
	}
	for _, name := range []string{"tray", "tray host"} {
		if err := g.Problem(name); err != nil {
			failed := doctor.Feature{Running: true, Detail: err.Error()}
			return func() doctor.Feature { return failed }
		}
	}
	return func() doctor.Feature {
		ok, detail := host.state()
		return doctor.Feature{Running: true, OK: ok, Detail: detail}
	}
}

// shortcutState is how the global shortcut came up, for the doctor.
func shortcutState(err error) doctor.Feature {
	keys := doctor.Feature{Running: true, OK: true, Detail: shortcut.Name + " is Conch's"}
	switch {
	case err == nil:
	case errors.Is(err, shortcut.ErrTaken):
		keys.OK, keys.Detail = false, err.Error()
	default:
		keys.OK, keys.Detail = false, err.Error()+"; it still works inside Conch's window"
	}
	return keys
}

// trayPart is the tray icon: Start shows it and keeps it current with the
// tasks; Stop removes it.
type trayPart struct {
	w       *window
	actions tray.Actions

	mu   sync.Mutex
	life startstop.State
	t    *tray.Tray
}

func (p *trayPart) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, err := p.life.Start(ctx)
	if err != nil {
		return err
	}
	t, err := tray.Start(p.actions)
	if err != nil {
		return err
	}
	p.t = t
	if p.w.o.Events != nil {
		p.life.WG.Add(1)
		go func() {
			defer p.life.WG.Done()
			t.Follow(ctx, p.w.o.Events, p.w.o.Tasks, p.w.chatItems)
		}()
	}
	return nil
}

func (p *trayPart) Stop() {
	p.life.Stop(&p.mu, nil)
	p.mu.Lock()
	t := p.t
	p.mu.Unlock()
	if t != nil {
		t.Stop()
	}
}

// hostPart follows whether a tray host is on the session bus.
type hostPart struct {
	mu   sync.Mutex
	life startstop.State
	h    *tray.Host
}

func (p *hostPart) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.life.Start(ctx); err != nil {
		return err
	}
	h, err := tray.WatchSessionHost()
	if err != nil {
		return err
	}
	p.h = h
	return nil
}

func (p *hostPart) Stop() {
	p.life.Stop(&p.mu, nil)
	p.mu.Lock()
	h := p.h
	p.mu.Unlock()
	if h != nil {
		h.Close()
	}
}

func (p *hostPart) state() (bool, string) {
	p.mu.Lock()
	h := p.h
	p.mu.Unlock()
	if h == nil {
		return false, "no tray host"
	}
	return h.State()
}

// shortcutPart is the global shortcut: Start grabs it, Stop lets it go.
type shortcutPart struct {
	onPress func()

	mu   sync.Mutex
	life startstop.State
	s    *shortcut.Shortcut
}

func (p *shortcutPart) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.life.Start(ctx); err != nil {
		return err
	}
	s, err := shortcut.Listen(p.onPress)
	if err != nil {
		return err
	}
	p.s = s
	return nil
}

func (p *shortcutPart) Stop() {
	p.life.Stop(&p.mu, nil)
	p.mu.Lock()
	s := p.s
	p.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
}

// chatItems are the chats waiting on the person, as tray menu items.
func (w *window) chatItems() []tray.Item {
	if w.o.Chats == nil {
		return nil
	}
	return chatQuestions(w.o.Chats())
}
