package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/chattask"
	"conch/backend/desktop"
	"conch/backend/doctor"
	"conch/backend/engine"
	"conch/backend/event"
	"conch/backend/follow"
	"conch/backend/handoff"
	"conch/backend/notify"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/procmark"
	"conch/backend/provider/registry"
	"conch/backend/provider/shell"
	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/taskrun"
)

// App wires Conch's engines together at start and closes them at the end.
// Every operation the surfaces offer is on svc; App holds no logic of its own.
type App struct {
	home     string
	store    *store.Bolt
	bus      *event.Bus
	tasks    *taskrun.Runner
	chats    *chat.Manager
	follow   *follow.Follower
	alerts   *notify.Service
	notifier notify.Notifier
	svc      *service.Service

	mu     sync.Mutex
	onOpen func() // brings the window forward (desktop only)
}

// surface says which front Conch runs behind.
type surface int

const (
	served surface = iota
	windowed
)

// openApp opens the home folder's state and starts the engines, healing
// what a Conch that died left behind.
func openApp(ctx context.Context, home string, on surface) (*App, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("make home %s: %w", home, err)
	}
	dbPath := filepath.Join(home, "conch.db")
	st, err := store.Open(dbPath)
	if errors.Is(err, store.ErrInUse) {
		return nil, inUse(home, dbPath)
	}
	if err != nil {
		return nil, err
	}
	// Every process a task or chat starts carries this home's mark, and
	// healing ends only what carries it: never a copy of this home's.
	mark, err := procmark.HomeMark(home, dbPath)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		userHome = home
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a := &App{home: home, store: st, bus: event.NewBus()}
	health := service.Health{StorePath: dbPath}
	if on == served {
		health.Tray = doctor.Feature{Detail: "conch serve has no tray; the desktop app shows one"}
		health.Shortcut = doctor.Feature{Detail: "conch serve has no global shortcut; the desktop app has Ctrl+Shift+Enter"}
	}
	// A stored provider that cannot be read is left out and told by the doctor.
	providers, err := registry.New(ctx, registry.Config{Store: st})
	if err != nil {
		health.ProvidersProblem = err.Error()
	}
	prefs := func() pref.Preferences { return preferences(st) }
	spending := budget.New(st, prefs)
	engines := engine.Lookup{Providers: providers}
	worktrees := filepath.Join(home, "worktrees")
	a.chats = chat.New(chat.Config{Store: st, Bus: a.bus, Providers: providers, Logs: output.New(filepath.Join(home, "chats")),
		Home: userHome, Spending: spending, HomeMark: mark, Log: log})
	chatTasks := chattask.New(chattask.Config{Chats: a.chats, Engines: engines, Preferences: prefs, Worktrees: worktrees})
	a.follow = follow.New(a.chats)
	sh := &shell.Shell{Home: userHome}
	health.Shell = sh.Ready
	logs := output.New(filepath.Join(home, "tasks"))
	a.tasks = taskrun.New(taskrun.Config{Store: st, Bus: a.bus, Logs: logs, Home: userHome, HomeMark: mark, Log: log,
		Executors: map[string]taskrun.Executor{"shell": sh}, Conversations: chatTasks, Observe: a.follow.Observe})
	// The hand-off tools start tasks in chats of their own, so they are
	// made after both and offered to the chats.
	h := handoff.New(handoff.Config{Chats: a.chats, Tasks: a.tasks, Follow: a.follow, Engines: engines,
		Spending: spending, Worktrees: worktrees})
	a.chats.Offer(h)
	// The notifier calls back into the service (clicks, buttons), which
	// sends through the notifier: the closure breaks the cycle.
	a.notifier, err = notify.Open(func(tag, action string) { a.alerts.Action(tag, action) })
	if err != nil {
		health.NotifyProblem = err.Error()
	}
	health.Notifier = a.notifier
	a.alerts = notify.NewService(notify.Config{Tasks: a.tasks, Bus: a.bus, Notifier: a.notifier,
		Topics: func() pref.Topics { return prefs().Notifications }, Open: a.open})
	a.alerts.Start(ctx)
	if err := a.tasks.Start(ctx); err != nil {
		a.alerts.Stop()
		_ = a.notifier.Close()
		_ = st.Close()
		return nil, err
	}
	if err := a.chats.Start(ctx); err != nil {
		a.tasks.Stop()
		a.alerts.Stop()
		_ = a.notifier.Close()
		_ = st.Close()
		return nil, err
	}
	chattask.SettleLeft(a.tasks)
	a.follow.Start(a.tasks)
	a.svc = service.New(service.Config{Tasks: a.tasks, Logs: logs, Chats: a.chats, Handoff: h,
		Providers: providers, Fallbacks: chatTasks, Prefs: st, Health: health})
	return a, nil
}

// inUse says which process has the home open, so the person knows what to stop.
func inUse(home, dbPath string) error {
	pid, ok := store.Holder(dbPath)
	if !ok {
		return fmt.Errorf("%s is in use by another process (is another Conch running?); stop it, or use another --home", home)
	}
	who := fmt.Sprintf("process %d", pid)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(b) > 0 {
		who += " (" + strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")) + ")"
	}
	return fmt.Errorf("%s is in use by another Conch, %s; stop it, or use another --home", home, who)
}

// close stops every run (they become interrupted) and closes the store; safe twice.
func (a *App) close() error {
	// Tasks first: their chats' turns end with them, and they are marked
	// interrupted rather than failed.
	a.tasks.Stop()
	a.chats.Stop()
	a.follow.Stop()
	a.alerts.Stop()
	_ = a.notifier.Close()
	a.bus.Close()
	return a.store.Close()
}

// preferences are the stored preferences, or the defaults when they cannot be read.
func preferences(st *store.Bolt) pref.Preferences {
	p, err := st.Preferences()
	if err != nil {
		return pref.Defaults()
	}
	return p
}

// open shows the chat a task came from: the window comes forward and the
// page follows the app.open event.
func (a *App) open(taskID string) {
	a.mu.Lock()
	bringForward := a.onOpen
	a.mu.Unlock()
	if bringForward != nil {
		bringForward()
	}
	a.bus.Publish(event.Event{Type: event.Open, ID: taskID})
}

// chatQuestions lists the chats waiting on the person, for the tray menu.
func (a *App) chatQuestions() []desktop.Question {
	var items []desktop.Question
	for _, c := range a.chats.List() {
		if c.Ask != nil {
			items = append(items, desktop.Question{ChatID: c.ID, Title: cmp.Or(c.Title, "New chat")})
		}
	}
	return items
}

// setDesktop records how the window's tray and shortcut came up, and how to
// bring the window forward.
func (a *App) setDesktop(tray, shortcut doctor.Feature, bringForward func()) {
	service.SetDesktop(a.svc, tray, shortcut)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onOpen = bringForward
}
