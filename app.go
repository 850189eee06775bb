package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"conch/backend/activity"
	"conch/backend/autostart"
	"conch/backend/backup"
	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/chattask"
	"conch/backend/doctor"
	"conch/backend/engine"
	"conch/backend/event"
	"conch/backend/handoff"
	"conch/backend/host"
	"conch/backend/hostlink"
	"conch/backend/notify"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/procmark"
	"conch/backend/provider/registry"
	"conch/backend/provider/shell"
	"conch/backend/push"
	"conch/backend/remote/ssh"
	"conch/backend/routine"
	"conch/backend/search"
	"conch/backend/service"
	"conch/backend/startstop"
	"conch/backend/store"
	"conch/backend/taskrun"
	"conch/backend/version"
)

// routineSeconds lets a routine's schedule have a seconds field; only the
// app's tests set it, to see real runs without waiting minutes.
var routineSeconds = false

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
	parts    *startstop.Group
	search   *search.Index
	push     *push.Sender
	routines *routine.Service
	hosts    *host.Service
	links    *hostlink.Links
	// logs are the tasks' output logs, the runner's own (a follower of
	// one wakes at each append).
	logs *output.Logs

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
	a, err := newApp(ctx, home, served)
	if err != nil {
		return nil, err
	}
	if err := a.parts.Start(ctx); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// newApp makes every part of the app, starting none (close stops them all).
func newApp(ctx context.Context, home string, served bool) (*App, error) {
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
	providers, err := registry.New(ctx, registry.Config{Store: st, Bus: a.bus})
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
	a.logs = logs
	health.Shell = sh.Ready
	if a.hosts, err = openHosts(home, st, a.bus, log); err != nil {
		_ = st.Close()
		return nil, err
	}
	a.links = hostlink.New(hostlink.Config{Hosts: a.hosts, Chats: a.chats, Providers: providers, Builds: hostlink.FindBuilds(version.Get().Version),
		Version: version.Get().Version, SocketDir: sshControlDir(), Log: log})
	a.chats.UseHosts(a.links)
	a.tasks = taskrun.New(taskrun.Config{Store: st, Bus: a.bus, Logs: logs, Home: userHome, HomeMark: mark, Log: log,
		Executors: map[string]taskrun.Executor{"shell": sh}, Conversations: chatTasks, Hosts: a.links})
	if a.follow, err = chattask.NewFollower(a.chats, a.tasks); err != nil {
		_ = st.Close()
		return nil, err
	}
	a.prune = backup.NewPruner(backup.PruneConfig{Tasks: a.tasks, Preferences: prefs, Log: log})
	// The hand-off tools start tasks in chats of their own, so they are
	// made after both and offered to the chats.
	// Routines are made from chats (schedule_routine, offered with the
	// hand-off tools) and run through the hand-off, so each knows the other.
	a.routines = routine.New(routine.Config{Store: st, Tasks: a.tasks, Engines: engines, Home: userHome, Seconds: routineSeconds, Log: log})
	h := handoff.New(handoff.Config{Chats: a.chats, Tasks: a.tasks, Follow: a.follow, Engines: engines,
		Spending: spending, Worktrees: worktrees, Preferences: prefs, Routines: a.routines, Hosts: a.links})
	a.routines.RunWith(h)
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
	pushKeys, pushBook := openPush(home, log)
	a.push = push.New(push.Config{Book: pushBook, Keys: pushKeys, Bus: a.bus, Log: log})
	a.search = search.New(search.Config{Dir: filepath.Join(home, search.DirName), Store: st, Logs: logs, Bus: a.bus, Log: log})
	a.parts = parts(a, h)
	a.svc = service.New(service.Config{Tasks: a.tasks, Logs: logs, Chats: a.chats, Handoff: h, Opens: &a.opens, Show: a.open, Search: a.search, Activity: activity.New(st), Routines: a.routines, Hosts: a.hosts, Links: a.links,
		PushKeys: pushKeys, PushBook: pushBook,
		Providers: providers, Fallbacks: chatTasks, Prefs: st, Health: health,
		Backup: &backup.Source{Store: st, Home: home}, UserHome: userHome, AtLogin: atLogin()})
	return a, nil
}

// parts are the long-lived parts in the order they start; they stop in
// reverse. The store, the bus and the notifier's connection were opened as
// they were made: everything else uses them, so they close last. Chats
// start before the runner, which dispatches the tasks left queued as it
// starts (a chat task's run needs its chat loaded), and so stop after it:
// a task's chat turn ends with its task, which is marked interrupted
// rather than failed. The follower starts once the runner has healed
// (what healing changed is queued for it), then hand-off, which needs
// both; notifications take the clicks that came while Conch started once
// the tasks stand as healed, after Web Push, which carries what they
// raise; the pruner last. Hosts, then the links to their runners,
// start before anything that could reach one, and stop after (closing
// their shared SSH connections; the hosts' tasks work on there). Routines
// start after the hand-off, which
// starts their runs (a catch-up run among them). Search follows the bus
// before anything writes, so it misses nothing.
func parts(a *App, h *handoff.Service) *startstop.Group {
	return startstop.NewGroup(
		startstop.Opened("store", a.store.Close),
		startstop.Opened("event bus", func() error {
			a.bus.Close()
			// Nothing a task or chat started outlives Conch, wherever it went.
			procmark.Signal(procmark.Mark{Home: a.mark}, syscall.SIGKILL)
			return nil
		}),
		startstop.Opened("notifier", a.notifier.Close),
		startstop.Part{Name: "hosts", Service: a.hosts},
		startstop.Part{Name: "host links", Service: a.links},
		startstop.Part{Name: "search", Service: a.search},
		startstop.Part{Name: "chats", Service: a.chats},
		startstop.Part{Name: "task runner", Service: a.tasks},
		startstop.Part{Name: "follower", Service: a.follow},
		startstop.Part{Name: "hand-off", Service: h},
		startstop.Part{Name: "web push", Service: a.push},
		startstop.Part{Name: "routines", Service: a.routines},
		startstop.Part{Name: "notifications", Service: a.alerts},
		startstop.Part{Name: "pruner", Service: a.prune},
	)
}

// openHosts makes the hosts' service: ssh through the system's OpenSSH,
// with Conch's own known_hosts in the home, the shared connections'
// sockets in the runtime folder, and the ssh config file the preferences
// name (none: the person's own).
func openHosts(home string, st *store.Bolt, bus *event.Bus, log *slog.Logger) (*host.Service, error) {
	c, err := ssh.New(ssh.Config{KnownHosts: filepath.Join(home, "known_hosts"), ControlDir: sshControlDir(),
		ConfigFileOf: func() string { return st.PreferencesOrDefaults().SSHConfig }})
	if err != nil {
		return nil, err
	}
	return host.New(host.Config{Store: st, SSH: c, Version: version.Get().Version, Bus: bus, Log: log}), nil
}

// sshControlDir is where the shared SSH connections' sockets go: the
// person's runtime folder, else a folder of their own in the temp folder
// (short either way: a socket's path is limited to about 100 bytes, and
// macOS's per-user temp folder alone takes half of that, so there /tmp).
func sshControlDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "conch-ssh")
	}
	tmp := os.TempDir()
	if runtime.GOOS == "darwin" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, fmt.Sprintf("conch-ssh-%d", os.Getuid()))
}

// PushLoopbackEnv, set to 1, lets a browser subscribe with an http push
// endpoint on a loopback address: for tests, whose push service is local.
const PushLoopbackEnv = "CONCH_PUSH_ALLOW_LOOPBACK_HTTP"

// openPush reads Web Push's VAPID key and subscriptions from the home
// (made at first use). Either failing leaves Web Push off, said in the
// log: Conch runs on without it.
func openPush(home string, log *slog.Logger) (*push.Keys, *push.Book) {
	keys, err := push.LoadKeys(home)
	if err != nil {
		log.Warn("web push is off", "err", err)
		return nil, nil
	}
	book, err := push.OpenBook(home, os.Getenv(PushLoopbackEnv) == "1")
	if err != nil {
		log.Warn("web push is off", "err", err)
		return nil, nil
	}
	return keys, book
}

// close stops every part in reverse (runs become interrupted) and closes
// the store last; safe twice, and after a start that failed half way.
func (a *App) close() { a.parts.Stop() }

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

// atLogin is "Open at login" for this conch: the system starts the binary
// running now (the installed /usr/bin/conch, or a build's own path).
func atLogin() service.AtLogin {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return autostart.Login{Exe: exe}
}
