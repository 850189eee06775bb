// Command conch is the Conch desktop app and its gateway.
//
//	conch [--home DIR]                      open the window
//	conch serve [--home DIR] [--addr A]     serve the app and API in a browser
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
	"syscall"
	"time"

	"conch/backend/desktop"
	"conch/backend/gateway"
)

//go:embed all:frontend/dist
var dist embed.FS

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "":
		return runDesktop(args, stdout, stderr)
	case "serve":
		return runServe(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "conch", version)
		return 0
	case "help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "conch: unknown command %q\n", cmd)
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  conch [--home DIR]                       open the Conch window
  conch serve [--home DIR] [--addr ADDR]   serve Conch in a browser (default 127.0.0.1:7420; port 0 picks one)
  conch version                            print the version
The home folder is --home, else $CONCH_HOME, else ~/.conch.
`)
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
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	homeFlag := fl.String("home", "", "home folder (default $CONCH_HOME or ~/.conch)")
	addr := fl.String("addr", "127.0.0.1:7420", "address to listen on; port 0 picks a free port")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	home, err := homeDir(*homeFlag)
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, home, *addr, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	return 0
}

// serve runs the gateway until ctx ends, then shuts down in order.
func serve(ctx context.Context, home, addr string, stdout, stderr io.Writer) error {
	app, err := openApp(ctx, home)
	if err != nil {
		return err
	}
	defer app.close()
	token, err := gateway.LoadToken(home)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gw, err := gateway.New(gateway.Config{
		Tasks: app.tasks, Prefs: app, Logs: app.logs, Bus: app.bus, Assets: assets(), Token: token, Log: log,
	}, ln.Addr().String())
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fmt.Fprintf(stdout, "conch: serving http://%s/?token=%s\n", displayAddr(ln.Addr()), token)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	app.bus.Close() // ends WebSocket streams, which Shutdown does not wait for
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
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
	fl := flag.NewFlagSet("conch", flag.ContinueOnError)
	fl.SetOutput(stderr)
	homeFlag := fl.String("home", "", "home folder (default $CONCH_HOME or ~/.conch)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if runtime.GOOS == "linux" && os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(stderr, "conch: no display; starting `conch serve` instead")
		return runServe(args, stdout, stderr)
	}
	home, err := homeDir(*homeFlag)
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, err := openApp(ctx, home)
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		return 1
	}
	defer app.close()
	err = desktop.Run(desktop.Options{
		Title:  "Conch",
		Assets: assets(),
		Bind:   []any{app},
		Events: app.bus,
	})
	if errors.Is(err, desktop.ErrUnavailable) {
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
