// Package hostrunner is `conch runner`: Conch without a window for a host
// (SPEC §6), its own home and store, its task runner with the shell
// executor, the chat tasks another Conch sends it on the coding-agent CLIs
// installed here (each in a chat of its own, with the powers it was sent
// with), and Conch's own API and event stream on a Unix socket that only
// its user can reach. Its chats are its tasks' own: it makes no others.
package hostrunner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"conch/backend/backup"
	"conch/backend/chat"
	"conch/backend/chattask"
	"conch/backend/engine"
	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/handoff"
	"conch/backend/output"
	"conch/backend/procmark"
	"conch/backend/provider/registry"
	"conch/backend/provider/shell"
	"conch/backend/remote"
	"conch/backend/service"
	"conch/backend/startstop"
	"conch/backend/store"
	"conch/backend/taskrun"
)

// runnerApp is a running `conch runner`.
type runnerApp struct {
	home  string
	store *store.Bolt
	bus   *event.Bus
	chats *chat.Manager
	tasks *taskrun.Runner
	// providers are the coding-agent CLIs found here (and the shell).
	providers *registry.Registry
	follow    *chattask.Follower
	sent      *handoff.Service
	gw        *gateway.Serving
	parts     *startstop.Group
}

// Run is `conch runner [--home DIR] [--socket PATH]`; it returns the exit
// code.
func Run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("runner", flag.ContinueOnError)
	fl.SetOutput(stderr)
	homeFlag := fl.String("home", "", "the runner's home folder (default ~/.conch-remote/home)")
	sockFlag := fl.String("socket", "", "the Unix socket to serve on (default $XDG_RUNTIME_DIR/conch/runner.sock, else ~/.conch-remote/run/runner.sock)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "conch runner: takes no arguments (got %q)\n", fl.Args())
		return 2
	}
	home, sock, err := runnerPaths(*homeFlag, *sockFlag)
	if err != nil {
		fmt.Fprintln(stderr, "conch runner:", err)
		return 2
	}
	// The SSH session that started it hanging up, or closing the pipes
	// it was given, must not end it: it outlives its parent.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := newRunnerApp(home, sock, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "conch runner:", err)
		return 1
	}
	defer r.parts.Stop()
	if err := r.parts.Start(ctx); err != nil {
		fmt.Fprintln(stderr, "conch runner:", err)
		return 1
	}
	fmt.Fprintf(stdout, "conch: runner serving on %s (process %d, home %s)\n", sock, os.Getpid(), home)
	select {
	case err := <-r.gw.Failed():
		fmt.Fprintln(stderr, "conch runner: serve:", err)
		return 1
	case <-ctx.Done():
	}
	// Stopping ends the gateway first, then every run (their tasks become
	// interrupted), then the store.
	r.parts.Stop()
	return 0
}

// runnerPaths picks the home and the socket: the flags, else the defaults.
func runnerPaths(home, sock string) (string, string, error) {
	var err error
	if home == "" {
		if home, err = remote.DefaultHome(); err != nil {
			return "", "", err
		}
	}
	if sock == "" {
		if sock, err = remote.DefaultSocket(); err != nil {
			return "", "", err
		}
	}
	if home, err = filepath.Abs(home); err != nil {
		return "", "", err
	}
	if sock, err = filepath.Abs(sock); err != nil {
		return "", "", err
	}
	return home, sock, nil
}

// newRunnerApp opens the home's store (a second runner on one home is
// refused there, by the store's lock), takes the socket and makes every
// part, starting none.
func newRunnerApp(home, sock string, stderr io.Writer) (*runnerApp, error) {
	dbPath := filepath.Join(home, "conch.db")
	st, err := store.Open(dbPath)
	if errors.Is(err, store.ErrInUse) {
		return nil, fmt.Errorf("another runner has this home: %w", err)
	}
	if err != nil {
		return nil, err
	}
	token, err := gateway.LoadToken(home)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	sk, err := remote.Listen(sock)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		userHome = home
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	mark := procmark.HomeMark(home, dbPath)
	r := &runnerApp{home: home, store: st, bus: event.NewBus()}
	sh, logs := &shell.Shell{Home: userHome}, output.New(filepath.Join(home, "tasks"))
	if err := r.makeChats(st, userHome, mark, log); err != nil {
		_ = sk.Close()
		_ = st.Close()
		return nil, err
	}
	// The desktop gives each task it sends the id it has there.
	chatTasks := chattask.New(chattask.Config{Chats: r.chats, Store: st, Log: log, Preferences: st.PreferencesOrDefaults,
		Engines: engine.Lookup{Providers: r.providers}, Worktrees: filepath.Join(home, "worktrees")})
	r.tasks = taskrun.New(taskrun.Config{Store: st, Bus: r.bus, Logs: logs, Home: userHome, HomeMark: mark, Log: log,
		Executors: map[string]taskrun.Executor{"shell": sh}, Conversations: chatTasks, ClientIDs: true})
	if r.follow, err = chattask.NewFollower(r.chats, r.tasks); err != nil {
		_ = sk.Close()
		_ = st.Close()
		return nil, err
	}
	r.sent = handoff.New(handoff.Config{Chats: r.chats, Tasks: r.tasks, Follow: r.follow, Engines: engine.Lookup{Providers: r.providers},
		Worktrees: filepath.Join(home, "worktrees"), Preferences: st.PreferencesOrDefaults, Lender: r.providers})
	lent := &returner{bus: r.bus, reg: r.providers, tasks: r.tasks}
	svc := service.New(service.Config{Tasks: r.tasks, Logs: logs, Prefs: st, UserHome: userHome,
		Chats: r.chats, Handoff: r.sent, Runner: true,
		Health: service.Health{StorePath: dbPath, Shell: sh.Ready, Served: true},
		Backup: &backup.Source{Store: st, Home: home},
	})
	gw := gateway.NewSocket(gateway.Config{API: svc, Bus: r.bus, Token: token, Log: log, Logs: logs})
	// Stopping it shuts the server down (event streams too) and removes
	// the socket and its pid file.
	r.gw = gateway.NewServing(gateway.NewServer(gw, log, gateway.Limits{}), sk.Listener(), r.bus)
	r.gw.Closed = func() { _ = sk.Close() }
	r.parts = startstop.NewGroup(
		startstop.Opened("store", st.Close),
		startstop.Opened("event bus", func() error {
			r.bus.Close()
			procmark.Signal(procmark.Mark{Home: mark}, syscall.SIGKILL)
			return nil
		}),
		startstop.Part{Name: "chats", Service: r.chats},
		startstop.Part{Name: "task runner", Service: r.tasks},
		startstop.Part{Name: "follower", Service: r.follow},
		startstop.Part{Name: "hand-off", Service: r.sent},
		startstop.Part{Name: "lent providers", Service: lent},
		startstop.Part{Name: "socket", Service: r.gw},
	)
	return r, nil
}

// makeChats finds the coding-agent CLIs installed here, where their
// installers put them too (a plain sh's PATH leaves those out), and makes
// the chats the tasks sent here run in. Keys the person keeps on the
// desktop never come here: the runner reads no API key variables and no
// keyring, so only the CLIs, signed in here on their own, take work.
func (r *runnerApp) makeChats(st *store.Bolt, userHome, mark string, log *slog.Logger) error {
	if err := os.Setenv("PATH", remote.AgentPath(os.Getenv("PATH"), userHome)); err != nil {
		return err
	}
	var err error
	r.providers, err = registry.New(context.Background(), registry.Config{Store: st, Keyring: noKeyring{},
		Getenv: func(string) string { return "" }, Log: log})
	if err != nil {
		log.Warn("read the runner's providers", "err", err)
	}
	r.chats = chat.New(chat.Config{Store: st, Bus: r.bus, Providers: r.providers, Logs: output.New(filepath.Join(r.home, "chats")),
		Home: userHome, HomeMark: mark, Log: log, Limit: chattask.Limits(st, log), ClientIDs: true})
	return nil
}

// noKeyring is the runner's keyring: none (keys are not kept here).
type noKeyring struct{}

var errNoKeyring = errors.New("a host's runner keeps no keys")

func (noKeyring) Get(string) (string, error) { return "", errNoKeyring }
func (noKeyring) Set(string, string) error   { return errNoKeyring }
func (noKeyring) Delete(string) error        { return errNoKeyring }
