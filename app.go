package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"conch/backend/backup"
	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/chattask"
	"conch/backend/doctor"
	"conch/backend/engine"
	"conch/backend/event"
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
	follow   *chattask.Follower
	prune    *backup.Pruner
	alerts   *notify.Service
	notifier notify.Notifier
	svc      *service.Service
	mark     string // this home's process mark

	mu     sync.Mutex
	onOpen func() // brings the window forward (desktop only)
	// opens keeps what a notification asked to show for a page that was
	// not listening yet.
	opens service.Opens
}

// openApp opens the home folder's state and starts the engines, healing
// what a Conch that died left behind. served is true for `conch serve`,
// which has no window (no tray, no global shortcut).
func openApp(ctx context.Context, home string, served bool) (*App, error) {
	dbPath := filepath.Join(home, "conch.db")
	st, err := store.Open(dbPath) // makes the home too
	if err != nil {
		return nil, err
	}
	// Every process a task or chat starts carries this home's mark, and
	// healing ends only what carries it: never a copy of this home's.
	mark := procmark.HomeMark(home, dbPath)
	userHome, err := os.UserHomeDir()
	if err != nil {
		userHome = home
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a := &App{home: home, store: st, bus: event.NewBus(), mark: mark}
	health := service.Health{StorePath: dbPath, Served: served}
	// A stored provider that cannot be read is left out and told by the doctor.
	providers, err := registry.New(ctx, registry.Config{Store: st})
	if err != nil {
		health.ProvidersProblem = err.Error()
	}
	prefs := st.PreferencesOrDefaults
	spending := budget.New(st, prefs)
	engines := engine.Lookup{Providers: providers}
	worktrees := filepath.Join(home, "worktrees")
	a.chats = chat.New(chat.Config{Store: st, Bus: a.bus, Providers: providers, Logs: output.New(filepath.Join(home, "chats")),
		Home: userHome, Spending: spending, HomeMark: mark, Log: log, Limit: chattask.Limits(st, log)})
	chatTasks := chattask.New(chattask.Config{Chats: a.chats, Store: st, Log: log, Engines: engines, Preferences: prefs, Worktrees: worktrees})
	sh, logs := &shell.Shell{Home: userHome}, output.New(filepath.Join(home, "tasks"))
	health.Shell = sh.Ready
	a.tasks = taskrun.New(taskrun.Config{Store: st, Bus: a.bus, Logs: logs, Home: userHome, HomeMark: mark, Log: log,
		Executors: map[string]taskrun.Executor{"shell": sh}, Conversations: chatTasks})
	if a.follow, err = chattask.NewFollower(a.chats, a.tasks); err != nil {
		_ = st.Close()
		return nil, err
	}
	a.prune = backup.NewPruner(backup.PruneConfig{Tasks: a.tasks, Preferences: prefs, Log: log})
	// The hand-off tools start tasks in chats of their own, so they are
	// made after both and offered to the chats.
	h := handoff.New(handoff.Config{Chats: a.chats, Tasks: a.tasks, Follow: a.follow, Engines: engines,
		Spending: spending, Worktrees: worktrees, Preferences: prefs})
	a.chats.Offer(h)
	// The notifier keeps the clicks that come before the service takes
	// them (one on a notification that started Conch, or pressed while it
	// starts); the service takes them as it starts, after the runner did.
	a.notifier, err = notify.Open(true)
	if err != nil {
		health.NotifyProblem = err.Error()
	}
	health.Notifier = a.notifier
	a.alerts = notify.NewService(notify.Config{Tasks: a.tasks, Bus: a.bus, Notifier: a.notifier,
		Topics: func() pref.Topics { return prefs().Notifications }, Open: a.open, Log: log})
	// Chats first: the runner dispatches the tasks left queued as it
	// starts, and a chat task's run needs its chat loaded.
	if err = a.chats.Start(ctx); err == nil {
		err = a.tasks.Start(ctx)
	}
	if err != nil {
		_ = a.close()
		return nil, err
	}
	a.alerts.Start(ctx)
	chattask.SettleLeft(a.tasks)
	_ = a.follow.Start(ctx)
	// Finished tasks past their retention go now, then daily.
	_ = a.prune.Start(ctx)
	a.svc = service.New(service.Config{Tasks: a.tasks, Logs: logs, Chats: a.chats, Handoff: h, Opens: &a.opens,
		Providers: providers, Fallbacks: chatTasks, Prefs: st, Health: health,
		Backup: &backup.Source{Store: st, Home: home}, UserHome: userHome})
	return a, nil
}

// close stops every run (they become interrupted) and closes the store; safe
// twice, and after a start that failed half way.
func (a *App) close() error {
	// Tasks first: their chats' turns end with them, and they are marked
	// interrupted rather than failed.
	a.prune.Stop()
	a.tasks.Stop()
	a.chats.Stop()
	a.follow.Stop()
	a.alerts.Stop()
	_ = a.notifier.Close()
	a.bus.Close()
	// Nothing a task or chat started outlives Conch, wherever it went.
	procmark.Signal(procmark.Mark{Home: a.mark}, syscall.SIGKILL)
	return a.store.Close()
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
	a.opens.Note(taskID) // a page that starts now (the click started Conch) takes it
	a.bus.Publish(event.Event{Type: event.Open, ID: taskID})
}

// setDesktop records how the window's tray stands and its shortcut came
// up, and how to bring the window forward.
func (a *App) setDesktop(tray func() doctor.Feature, shortcut doctor.Feature, bringForward func()) {
	service.SetDesktop(a.svc, tray, shortcut)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onOpen = bringForward
}
