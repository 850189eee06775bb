//go:build desktop

package desktop

import (
	"context"
	"errors"
	"log/slog"

	"github.com/wailsapp/wails/v2/pkg/runtime"

	"conch/backend/doctor"
	"conch/backend/event"
	"conch/backend/shortcut"
	"conch/backend/tray"
)

// extras starts the tray icon and the global shortcut beside the window and
// reports how they came up; both stop when ctx ends.
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
	trayState := func() doctor.Feature { return doctor.Feature{Running: true} }
	if w.o.Tasks != nil {
		trayState = w.trayHost(ctx)
		t, err := tray.Start(tray.Actions{
			Open:     bringForward,
			Tasks:    func() { bringForward(); publish(event.Event{Type: event.Open}) },
			OpenTask: func(id string) { bringForward(); publish(event.Event{Type: event.Open, ID: id}) },
			OpenChat: func(id string) { bringForward(); publish(event.Event{Type: event.OpenChat, ID: id}) },
			Answer:   w.o.answer,
			Log:      slog.Default(),
			Quit:     func() { runtime.Quit(wailsCtx) },
		})
		if err != nil {
			failed := doctor.Feature{Running: true, Detail: err.Error()}
			trayState = func() doctor.Feature { return failed }
		} else {
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				if w.o.Events != nil {
					t.Follow(ctx, w.o.Events, w.o.Tasks, w.chatItems)
				}
				<-ctx.Done()
				t.Stop()
			}()
		}
	}

	keys := doctor.Feature{Running: true, OK: true, Detail: shortcut.Name + " is Conch's"}
	s, err := shortcut.Listen(func() {
		bringForward()
		publish(event.Event{Type: event.Compose})
	})
	switch {
	case err == nil:
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			<-ctx.Done()
			_ = s.Close()
		}()
	case errors.Is(err, shortcut.ErrTaken):
		keys.OK, keys.Detail = false, err.Error()
	default:
		keys.OK, keys.Detail = false, err.Error()+"; it still works inside Conch's window"
	}
	if w.o.OnReady != nil {
		w.o.OnReady(trayState, keys, bringForward)
	}
}

// trayHost returns how the tray stands for the doctor: whether a tray host
// is on the session bus, asked each time (the panel may come after Conch,
// as at login). It follows the host until ctx ends.
func (w *window) trayHost(ctx context.Context) func() doctor.Feature {
	host, err := tray.WatchSessionHost()
	if err != nil {
		failed := doctor.Feature{Running: true, Detail: err.Error()}
		return func() doctor.Feature { return failed }
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		<-ctx.Done()
		host.Close()
	}()
	return func() doctor.Feature {
		ok, detail := host.State()
		return doctor.Feature{Running: true, OK: ok, Detail: detail}
	}
}

// chatItems are the chats waiting on the person, as tray menu items.
func (w *window) chatItems() []tray.Item {
	if w.o.Chats == nil {
		return nil
	}
	return chatQuestions(w.o.Chats())
}
