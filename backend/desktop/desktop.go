// Package desktop opens Conch's window: the only package that imports the
// Wails runtime. It is built with the `desktop` tag (plus `webkit2_41` on
// Linux); without it Run returns ErrUnavailable, so `go test ./...` and
// `go vet ./...` never link GTK or WebKit.
package desktop

import (
	"context"
	"errors"
	"io/fs"

	"conch/backend/conversation"
	"conch/backend/doctor"
	"conch/backend/event"
	"conch/backend/task"
)

// ErrUnavailable is returned by Run in a binary built without the desktop tag.
var ErrUnavailable = errors.New("desktop: this binary was built without the desktop window (build with -tags desktop,production,webkit2_41, or run `conch serve`)")

// Options describes the window and what it is wired to.
type Options struct {
	// Title is the window title; the desktop smoke test finds the window by it.
	Title string
	// Assets is the built frontend; its root contains index.html.
	Assets fs.FS
	// Bind lists the objects whose methods the page may call
	// (*service.Service becomes window.go.service.Service).
	Bind []any
	// FormatError is what a bound method's error becomes in the page (the
	// same JSON error body the HTTP API answers with).
	FormatError func(error) any
	// Events is bridged into the page: every event is emitted as EventName.
	Events *event.Bus
	// OnStartup runs once the window's context exists.
	OnStartup func(ctx context.Context)
	// OnShutdown runs when the window is closing, after the event bridge stopped.
	OnShutdown func(ctx context.Context)
	// Tasks lists the tasks, for the tray's counts and menu (nil: no tray).
	Tasks func() []task.Task
	// Chats lists the person's chats waiting on an answer, for the
	// tray's menu.
	Chats func() []conversation.Conversation
	// AnswerTask and AnswerChat answer a task's or a chat's question
	// picked in the tray, by its id: the paths the page uses, which
	// refuse a question settled meanwhile (nil: the tray cannot answer).
	AnswerTask func(taskID, askID string, allow bool) error
	AnswerChat func(chatID, askID string, allow bool) error
	// OnReady reports how the tray stands (asked again at each call: its
	// host may come later) and how the global shortcut came up, and gives a
	// way to bring the window forward (a notification was clicked).
	OnReady func(tray func() doctor.Feature, shortcut doctor.Feature, bringForward func())
}

// EventName is the runtime event that carries each event.Event to the page.
const EventName = "conch:event"

// reloadEvent is emitted after the bridge fell behind and resubscribed: the
// page missed events and must reload its lists.
var reloadEvent = map[string]string{"type": "reload"}

// bridgeBuffer is how many events the bridge may have in flight before the
// bus drops it; the window reloads after a drop, so this only has to cover bursts.
const bridgeBuffer = 256

// singleInstanceID names the lock that keeps one Conch window per user
// session (on Linux a name on the D-Bus session bus; see ActivateRunning).
const singleInstanceID = "dev.conch.desktop.6b0f6a1e"
