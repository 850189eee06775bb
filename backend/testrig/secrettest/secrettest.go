//go:build unix

package secrettest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"conch/backend/testrig/dbustest"
	"conch/backend/testrig/xvfbtest"
)

// Password unlocks the login collection of every daemon Start starts.
const Password = "conch-test-password"

// Login is the collection gnome-keyring keeps keys in.
const Login = dbus.ObjectPath("/org/freedesktop/secrets/collection/login")

// startWait bounds how long a daemon may take to come up; only a broken
// machine reaches it.
const startWait = 20 * time.Second

// Env is a private session: the bus's address and the directories the
// processes on it are given.
type Env struct {
	// Addr is the bus, for DBUS_SESSION_BUS_ADDRESS.
	Addr string
	// Home is HOME (the keyrings are under .local/share/keyrings).
	Home    string
	runtime string
	display string
}

// Need skips the test when gnome-keyring-daemon is not installed (scripts/
// setup installs it), and fails it when the tools that go with it are
// missing.
func Need(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gnome-keyring-daemon"); err != nil {
		t.Skip("gnome-keyring-daemon is not installed (Debian package gnome-keyring; scripts/setup --test installs it): no real Secret Service to test against")
	}
	for _, tool := range []string{"dbus-daemon", "secret-tool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: run scripts/setup --test (Debian packages dbus, libsecret-tools)", tool)
		}
	}
}

// Bus starts a private session bus with nothing on it and returns its
// session; the bus ends with the test. display, when not empty, is the X
// display the bus may start gnome-keyring's password prompter on (the
// only service it can activate), as a desktop's bus would.
func Bus(t testing.TB, display string) *Env {
	t.Helper()
	dir := t.TempDir()
	e := &Env{Home: filepath.Join(dir, "home"), runtime: filepath.Join(dir, "run"), display: display}
	for _, d := range []string{e.Home, e.runtime} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	o := dbustest.Options{Env: e.environ()} // what it activates finds its bus there, as on a desktop
	if display != "" {
		o.ServiceDir = filepath.Join(dir, "services")
		prompter := "[D-BUS Service]\nName=org.gnome.keyring.SystemPrompter\nExec=" + Prompter + "\n"
		if err := os.MkdirAll(o.ServiceDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(o.ServiceDir, "org.gnome.keyring.SystemPrompter.service"), []byte(prompter), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.Addr = dbustest.StartWith(t, o)
	return e
}

// environ is the environment of the processes of the session: nothing of
// the test's own desktop, keyring or bus.
func (e *Env) environ() []string {
	env := []string{
		"DBUS_SESSION_BUS_ADDRESS=" + e.Addr, "PATH=" + os.Getenv("PATH"), "HOME=" + e.Home, "XDG_RUNTIME_DIR=" + e.runtime,
		"XDG_DATA_HOME=" + filepath.Join(e.Home, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(e.Home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(e.Home, ".cache"),
		"NO_AT_BRIDGE=1", // the prompter would start an accessibility bus of its own
		"GSETTINGS_BACKEND=memory",
	}
	if e.display != "" {
		env = append(env, "DISPLAY="+e.display)
	}
	return env
}

// Keyring starts gnome-keyring-daemon (the secrets component) on e's bus
// and waits until it serves the Secret Service. unlock gives it Password
// on stdin, which makes (the first time) and unlocks the login
// collection; without it the login collection stays locked, or absent in
// a home that never had one. The daemon ends with the test.
func (e *Env) Keyring(t testing.TB, unlock bool) *Daemon {
	t.Helper()
	conn := e.Connect(t)
	owned := make(chan *dbus.Signal, 8)
	conn.Signal(owned)
	defer conn.RemoveSignal(owned)
	if err := conn.AddMatchSignal(dbus.WithMatchInterface("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, "org.freedesktop.secrets")); err != nil {
		t.Fatal(err)
	}
	args := []string{"--foreground", "--components=secrets"}
	if unlock {
		args = append(args, "--unlock")
	}
	cmd := exec.Command("gnome-keyring-daemon", args...)
	cmd.Env = e.environ()
	cmd.Stdin = strings.NewReader(Password)
	if !unlock {
		cmd.Stdin = nil
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{cmd: cmd}
	t.Cleanup(d.Stop)
	deadline := time.After(startWait)
	for {
		select {
		case s := <-owned:
			if len(s.Body) == 3 && s.Body[2] != "" {
				if unlock {
					e.checkUnlocked(t, conn)
				}
				return d
			}
		case <-deadline:
			t.Fatalf("gnome-keyring-daemon did not serve the Secret Service within %s", startWait)
		}
	}
}

// Daemon is a running gnome-keyring-daemon.
type Daemon struct {
	cmd   *exec.Cmd
	ended bool
}

// Stop ends the daemon (a keyring that goes away, or one to start again
// on the same home).
func (d *Daemon) Stop() {
	if !d.ended {
		d.ended = true
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait()
	}
}

// Freeze stops the daemon with SIGSTOP until the test ends: it keeps its
// bus name and answers nothing, as a keyring that hangs.
func (d *Daemon) Freeze(t testing.TB) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.cmd.Process.Signal(syscall.SIGCONT) })
}

// checkUnlocked fails the test unless the login collection is there and
// unlocked: the daemon reads the password before it takes the bus name.
func (e *Env) checkUnlocked(t testing.TB, conn *dbus.Conn) {
	t.Helper()
	v, err := conn.Object("org.freedesktop.secrets", Login).GetProperty("org.freedesktop.Secret.Collection.Locked")
	if locked, ok := v.Value().(bool); err != nil || !ok || locked {
		t.Fatalf("the login collection is not unlocked: %v %v", v, err)
	}
}

// Connect opens a connection to e's bus, closed with the test.
func (e *Env) Connect(t testing.TB) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(e.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Lock locks the login collection over D-Bus, as a screen lock or the
// person in Seahorse would.
func (e *Env) Lock(t testing.TB) {
	t.Helper()
	conn := e.Connect(t)
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	err := conn.Object("org.freedesktop.secrets", "/org/freedesktop/secrets").
		Call("org.freedesktop.Secret.Service.Lock", 0, []dbus.ObjectPath{Login}).Store(&locked, &prompt)
	if err != nil || len(locked) != 1 || prompt != "/" {
		t.Fatalf("lock the login collection: %v %v %v", locked, prompt, err)
	}
}

// Lookup reads the secret with service and user (go-keyring's attributes)
// with secret-tool, a client of libsecret's own; ok is false when there
// is none. It refuses a locked collection rather than prompt.
func (e *Env) Lookup(t testing.TB, service, user string) (secret string, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "secret-tool", "lookup", "service", service, "username", user)
	cmd.Env = e.environ()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ee, isExit := err.(*exec.ExitError); isExit && ee.ExitCode() == 1 && stderr.Len() == 0 {
			return "", false
		}
		t.Fatalf("secret-tool lookup: %v %s", err, stderr.String())
	}
	return string(out), true
}

// Store files secret under service and user with secret-tool.
func (e *Env) Store(t testing.TB, service, user, secret string) {
	t.Helper()
	cmd := exec.Command("secret-tool", "store", "--label", fmt.Sprintf("%s on %s", user, service), "service", service, "username", user)
	cmd.Env = e.environ()
	cmd.Stdin = strings.NewReader(secret)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("secret-tool store: %v %s", err, out)
	}
}

// Prompter is where gnome-keyring's password prompter is installed (Debian
// package gcr, which gnome-keyring depends on).
const Prompter = "/usr/libexec/gcr-prompter"

// Display starts a virtual X display of the test's own, for a bus whose
// prompter shows a real unlock prompt that nobody answers, and returns its
// name (":N").
func Display(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath(Prompter); err != nil {
		t.Fatalf("%s is missing: run scripts/setup --test (Debian packages xvfb, gnome-keyring)", Prompter)
	}
	return xvfbtest.Display(t)
}
