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
	"strings"
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

// agentDirs are the folders, under the home ("~/…") or not, where the
// coding-agent CLIs are put by their installers (npm's user prefix, the
// native installers) beyond a plain shell's PATH: a host's probe looks
// there, and its runner runs them from there.
var agentDirs = []string{"~/.local/bin", "~/bin", "~/.npm-global/bin", "/usr/local/bin"}

// AgentPath is path with the folders the coding-agent CLIs are installed
// in added at its end (home is the user's home), each once.
func AgentPath(path, home string) string {
	have := map[string]bool{}
	parts := filepath.SplitList(path)
	for _, p := range parts {
		have[p] = true
	}
	for _, d := range agentDirs {
		if strings.HasPrefix(d, "~/") {
			d = filepath.Join(home, d[2:])
		}
		if !have[d] {
			have[d] = true
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, string(os.PathListSeparator))
}

// AgentPathLine is the line of sh that does what AgentPath does.
func AgentPathLine() string {
	dirs := make([]string, len(agentDirs))
	for i, d := range agentDirs {
		dirs[i] = strings.Replace(d, "~/", "$HOME/", 1)
	}
	return `PATH="$PATH:` + strings.Join(dirs, ":") + `"`
}
