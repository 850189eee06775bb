// Package hostrunner is `conch runner`: Conch without a window for a host
// (SPEC §6), its own home and store, its task runner with the shell
// executor, and Conch's own API and event stream on a Unix socket that
// only its user can reach. Chats and agent CLIs are not part of it yet:
// their operations answer not_found ("… are not available here").
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
	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/output"
	"conch/backend/procmark"
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
	tasks *taskrun.Runner
	gw    *gateway.Serving
	parts *startstop.Group
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
	// The desktop gives each task it sends the id it has there.
	r.tasks = taskrun.New(taskrun.Config{Store: st, Bus: r.bus, Logs: logs, Home: userHome, HomeMark: mark, Log: log,
		Executors: map[string]taskrun.Executor{"shell": sh}, ClientIDs: true})
	svc := service.New(service.Config{Tasks: r.tasks, Logs: logs, Prefs: st, UserHome: userHome,
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
		startstop.Part{Name: "task runner", Service: r.tasks},
		startstop.Part{Name: "socket", Service: r.gw},
	)
	return r, nil
}
