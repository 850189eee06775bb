// Package remote is the runner's seam on a host: where `conch runner`
// keeps its home and its socket, how it takes the socket (a folder only
// its user enters, the socket 0600, refused while a live runner holds it,
// a stale one replaced) with its pid file beside it, and the command
// line that starts it detached from the SSH session that asked for it.
package remote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrHeld is returned by Listen when a live runner holds the socket's
// path (its pid file is locked).
var ErrHeld = errors.New("held by a live runner")

// PidSuffix names the pid file beside a socket: runner.sock.pid. The
// runner holds a lock on it while it serves, so a live runner is told
// from a stale socket without connecting.
const PidSuffix = ".pid"

// DefaultHome is the runner's own home on a host: ~/.conch-remote/home,
// apart from a desktop Conch's ~/.conch on the same computer.
func DefaultHome() (string, error) {
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find your home folder: %w (pass --home)", err)
	}
	return filepath.Join(u, ".conch-remote", "home"), nil
}

// DefaultSocket is where the runner serves: $XDG_RUNTIME_DIR/conch/runner.sock
// (a folder the system keeps for this user alone, emptied at logout and
// reboot), else ~/.conch-remote/run/runner.sock.
func DefaultSocket() (string, error) {
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		if fi, err := os.Stat(rt); err == nil && fi.IsDir() {
			return filepath.Join(rt, "conch", "runner.sock"), nil
		}
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find your home folder: %w (pass --socket)", err)
	}
	return filepath.Join(u, ".conch-remote", "run", "runner.sock"), nil
}
