// Package dbustest starts a private D-Bus session daemon for tests, so
// notification and tray tests talk to real D-Bus without touching the
// desktop's own bus.
package dbustest

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
)

// config is a session bus's configuration with no service folder but the
// one given (usually none): a test's bus starts nothing by itself, so a
// name nobody owns (no notification server, no tray host) stays unowned
// rather than starting the machine's own xfce4-notifyd or dunst.
const config = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  %s
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// Start runs a session dbus-daemon for the test and returns its address;
// the daemon ends with the test. Unlike `dbus-daemon --session` it
// activates no services.
func Start(t testing.TB) string {
	t.Helper()
	return StartWith(t, Options{})
}

// Options change the bus StartWith runs.
type Options struct {
	// ServiceDir is the one folder of .service files the bus may activate
	// ("": it activates nothing).
	ServiceDir string
	// Env is the environment of the daemon, and so of what it activates,
	// with DBUS_SESSION_BUS_ADDRESS set to the bus (nil: the test's own).
	Env []string
}

// StartWith is Start with o's service folder and environment.
func StartWith(t testing.TB, o Options) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatal("dbus-daemon is missing: run scripts/setup --test (Debian package dbus)")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "session.conf")
	var sock, services strings.Builder
	_ = xml.EscapeText(&sock, []byte(filepath.Join(dir, "bus")))
	if o.ServiceDir != "" {
		services.WriteString("<servicedir>")
		_ = xml.EscapeText(&services, []byte(o.ServiceDir))
		services.WriteString("</servicedir>")
	}
	if err := os.WriteFile(conf, fmt.Appendf(nil, config, sock.String(), services.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	if o.Env != nil {
		cmd.Env = append(o.Env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(dir, "bus"))
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// Connect opens a connection to the bus at addr, closed with the test.
func Connect(t testing.TB, addr string) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
