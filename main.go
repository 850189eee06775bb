// Command conch is the Conch desktop app and its gateway.
//
//	conch [--home DIR]                      open the window
//	conch serve [--home DIR] [--addr A]     serve the app and API in a browser
//	conch doctor                            say what is wrong and where to fix it
//	conch backup FILE [--with-output]       save a live backup of the home's store
//	conch restore FILE [--replace]          bring a backup back into a home no Conch runs on
//	conch runner [--home DIR] [--socket P]  run headless on a host, serving on a Unix socket
//	conch tasks | run | logs | stop | …     drive a running Conch (backend/cli)
//	conch version
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"conch/backend/cli"
	"conch/backend/client"
	"conch/backend/conversation"
	"conch/backend/desktop"
	"conch/backend/doctor"
	"conch/backend/errcode"
	"conch/backend/gateway"
	"conch/backend/hostrunner"
	"conch/backend/notify"
	"conch/backend/provider/shell"
	"conch/backend/service"
	"conch/backend/task"
)

//go:embed all:frontend/dist
var dist embed.FS

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if runtime.GOOS == "windows" {
		// A toast clicked while no Conch ran starts one, with a flag of
		// COM's; the click itself arrives once the notifier is open.
		args, _ = notify.LaunchedByToast(args)
	}
	return cli.Run(args, stdout, stderr, cli.Config{
		Home: homeDir, Desktop: runDesktop, Serve: runServe, Doctor: runDoctor, Runner: hostrunner.Run,
	})
}

// flags are a subcommand's flags; every subcommand takes --home.
type flags struct {
	*flag.FlagSet
	home   *string
	stderr io.Writer
}

func newFlags(name string, stderr io.Writer) flags {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	return flags{FlagSet: fl, home: fl.String("home", "", "home folder (default $CONCH_HOME or ~/.conch)"), stderr: stderr}
}

// parse reads args and picks the home folder; code is the exit code to
// return at once, or -1 to go on.
func (f flags) parse(args []string) (home string, code int) {
	if err := f.Parse(args); err != nil {
		return "", 2
	}
	home, err := homeDir(*f.home)
	if err != nil {
		fmt.Fprintln(f.stderr, "conch:", err)
		return "", 1
	}
	return home, -1
}

// homeDir picks the home folder: the flag, $CONCH_HOME, or ~/.conch.
func homeDir(flagValue string) (string, error) {
	h := flagValue
	if h == "" {
		h = os.Getenv("CONCH_HOME")
	}
	if h == "" {
		u, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find your home folder: %w (pass --home)", err)
		}
		h = filepath.Join(u, ".conch")
	}
	return filepath.Abs(h)
}

func assets() fs.FS {
	sub, err := fs.Sub(dist, "frontend/dist")
	if err != nil {
		return nil
	}
	if _, err := fs.Stat(sub, "index.html"); err != nil {
		return nil
	}
	return sub
}

func runServe(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("serve", stderr)
	addr := fl.String("addr", "127.0.0.1:7420", "address to listen on (loopback only unless --allow-remote); port 0 picks a free port")
	allowRemote := fl.Bool("allow-remote", false, "allow an --addr beyond this machine (served over plain HTTP)")
	home, code := fl.parse(args)
	if code >= 0 {
		return code
	}
	// The address is checked (and taken) before anything else starts.
	ln, hosts, err := gateway.Listen(*addr, *allowRemote)
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, err := openApp(ctx, home, true)
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	defer app.close()
	gw, err := startGateway(ctx, app, ln, hosts, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	select {
	case err := <-gw.Failed():
		fmt.Fprintln(stderr, "conch: serve:", err)
		gw.Stop()
		return 1
	case <-ctx.Done():
	}
	gw.Stop()
	return 0
}

// servedGateway is the app's gateway on its TCP listener: a
// gateway.Serving that, as it starts, prints the sign-in URL and records
// where it serves for `conch doctor`, and lets that record go as it stops.
type servedGateway struct {
	*gateway.Serving
	base    string
	token   string
	urlPath string
}

// urlFile records where a running Conch serves, for `conch doctor`.
const urlFile = "gateway-url"

// newGateway readies the app's gateway on ln (from gateway.Listen, which
// names the hosts beyond loopback it may answer as); it serves once
// started. On an error ln is closed.
func newGateway(app *App, ln net.Listener, hosts []string, stdout, stderr io.Writer) (*servedGateway, error) {
	token, err := gateway.LoadToken(app.home)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if len(hosts) > 0 {
		fmt.Fprintf(stderr, "conch: warning: serving beyond this machine (as %s) over plain HTTP: the sign-in token and all you do cross the network unencrypted; use it only on a network you trust\n", strings.Join(hosts, ", "))
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gw, err := gateway.New(gateway.Config{API: app.svc, Bus: app.bus, Assets: assets(), Token: token, Log: log, Hosts: hosts, Logs: app.logs},
		ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, err
	}
	g := &servedGateway{Serving: gateway.NewServing(gateway.NewServer(gw, log, gateway.Limits{}), ln, app.bus),
		base: "http://" + displayAddr(ln.Addr()), token: token, urlPath: filepath.Join(app.home, urlFile)}
	g.Opened = func() error {
		if err := os.WriteFile(g.urlPath, []byte(g.base+"\n"), 0o600); err != nil {
			return fmt.Errorf("record the gateway address: %w", err)
		}
		// The token rides in the fragment: a browser never sends it to a
		// server, a log or a Referer; the page keeps it for this tab.
		fmt.Fprintf(stdout, "conch: serving %s/#token=%s\n", g.base, g.token)
		return nil
	}
	g.Closed = func() {
		if b, err := os.ReadFile(g.urlPath); err == nil && strings.TrimSpace(string(b)) == g.base {
			_ = os.Remove(g.urlPath)
		}
	}
	return g, nil
}

// startGateway makes the app's gateway on ln and starts it.
func startGateway(ctx context.Context, app *App, ln net.Listener, hosts []string, stdout, stderr io.Writer) (*servedGateway, error) {
	gw, err := newGateway(app, ln, hosts, stdout, stderr)
	if err != nil {
		return nil, err
	}
	if err := gw.Start(ctx); err != nil {
		gw.Stop()
		return nil, err
	}
	return gw, nil
}

// displayAddr names a listening address the way a browser on this machine
// reaches it.
func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if tcp.IP.IsUnspecified() {
		return fmt.Sprintf("127.0.0.1:%d", tcp.Port)
	}
	return a.String()
}

func runDesktop(args []string, stdout, stderr io.Writer) int {
	if runtime.GOOS == "linux" && os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(stderr, "conch: no display; starting `conch serve` instead")
		return runServe(args, stdout, stderr)
	}
	home, code := newFlags("conch", stderr).parse(args)
	if code >= 0 {
		return code
	}
	// A Conch already open holds the store: show its window instead.
	if desktop.ActivateRunning() {
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, err := openApp(ctx, home, false)
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	defer app.close()
	// The window's own gateway lets a browser and `conch doctor` reach it.
	ln, _, err := gateway.Listen("127.0.0.1:0", false)
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	gw, err := startGateway(ctx, app, ln, nil, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	defer gw.Stop()
	err = desktop.Run(desktop.Options{
		Title:       "Conch",
		Assets:      assets(),
		Bind:        []any{app.svc},
		FormatError: func(err error) any { return errcode.BodyOf(err) },
		Events:      app.bus,
		Tasks:       func() []task.Task { tasks, _ := app.tasks.Active(); return tasks },
		Chats:       func() []conversation.Conversation { cs, _ := app.chats.Asking(); return cs },
		AnswerTask:  func(id, askID string, allow bool) error { _, err := app.svc.AnswerTask(id, askID, allow); return err },
		AnswerChat:  func(id, askID string, allow bool) error { _, err := app.svc.AnswerAsk(id, askID, allow); return err },
		OnReady:     app.setDesktop,
	})
	if errors.Is(err, desktop.ErrUnavailable) {
		gw.Stop()
		app.close()
		fmt.Fprintln(stderr, "conch: this build has no window (built without the desktop tag); starting `conch serve` instead")
		return runServe(args, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	return 0
}

func runDoctor(args []string, stdout, stderr io.Writer) int {
	home, code := newFlags("doctor", stderr).parse(args)
	if code >= 0 {
		return code
	}
	rep, from := askRunningDoctor(home)
	if from == "" {
		rep = service.OfflineDoctor(home, (&shell.Shell{}).Ready)
		fmt.Fprintf(stdout, "Conch is not running; checked %s directly.\n\n", home)
	} else {
		fmt.Fprintf(stdout, "Asked the running Conch at %s.\n\n", from)
	}
	fmt.Fprint(stdout, rep.Text())
	if !rep.OK {
		return 1
	}
	return 0
}

// askRunningDoctor asks a Conch serving from home for its report; from is
// empty when none answers.
func askRunningDoctor(home string) (rep doctor.Report, from string) {
	c, err := client.Dial(home)
	if err != nil {
		return rep, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c.Do(ctx, http.MethodGet, "/api/doctor", nil, &rep) != nil {
		return doctor.Report{}, "" // a stale file from a Conch that died
	}
	return rep, c.Base
}
