// Package sessionbus connects to the person's D-Bus session bus only when
// there is one. godbus, asked for a session bus when none is set, launches
// a new dbus-daemon (dbus-launch) that outlives Conch; on a server or in CI
// that leaves daemons behind and finds nothing useful on them anyway.
package sessionbus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/godbus/dbus/v5"
)

// ErrNone is returned when this session has no D-Bus session bus.
var ErrNone = errors.New("no D-Bus session bus")

// Address returns the session bus address: $DBUS_SESSION_BUS_ADDRESS, else
// the systemd user bus socket when it exists.
func Address() (string, bool) {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a, true
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = filepath.Join("/run/user", strconv.Itoa(os.Getuid()))
	}
	sock := filepath.Join(dir, "bus")
	if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
		return "unix:path=" + sock, true
	}
	return "", false
}

// Connect opens a private connection to the session bus, or returns ErrNone
// without starting one.
func Connect() (*dbus.Conn, error) {
	addr, ok := Address()
	if !ok {
		return nil, ErrNone
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return nil, fmt.Errorf("connect to the session bus: %w", err)
	}
	return conn, nil
}
