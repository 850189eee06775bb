// Package procmark marks the processes Conch starts with the home that
// started them and the task or chat they belong to, and finds them again.
//
// A mark lives in a process's environment, which its children inherit, so a
// grandchild that left its process group still carries it. Healing at start
// ends only what carries this home's mark: a recorded pid alone is reused by
// the OS, and a task id alone is shared by a copy of the home.
package procmark

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables that carry a mark.
const (
	// EnvHome names the home (see HomeMark).
	EnvHome = "CONCH_HOME_MARK"
	// EnvTask names the task a process works for.
	EnvTask = "CONCH_TASK_ID"
	// EnvChat names the chat a process works for.
	EnvChat = "CONCH_CHAT_ID"
)

// Mark is what a process started by Conch carries. Home is always set;
// Task and Chat name what it works for (a task's own chat has both).
type Mark struct {
	Home string
	Task string
	Chat string
}

// Env returns base without any mark it carried (a Conch started by a task
// must not pass its parent's mark on as its own) and with m's.
func (m Mark) Env(base []string) []string {
	out := make([]string, 0, len(base)+3)
	for _, kv := range base {
		if strings.HasPrefix(kv, EnvHome+"=") || strings.HasPrefix(kv, EnvTask+"=") || strings.HasPrefix(kv, EnvChat+"=") {
			continue
		}
		out = append(out, kv)
	}
	if m.Home != "" {
		out = append(out, EnvHome+"="+m.Home)
	}
	if m.Task != "" {
		out = append(out, EnvTask+"="+m.Task)
	}
	if m.Chat != "" {
		out = append(out, EnvChat+"="+m.Chat)
	}
	return out
}

// Matches reports whether a process environment (NUL-separated, as
// /proc/<pid>/environ holds it) carries m: its home, and its task and chat
// where m names them. A mark without a home matches nothing, so a caller
// that forgot to say which home never ends another's processes.
func (m Mark) Matches(environ []byte) bool {
	if m.Home == "" {
		return false
	}
	vars := map[string]string{}
	for _, kv := range strings.Split(string(environ), "\x00") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (k == EnvHome || k == EnvTask || k == EnvChat) {
			vars[k] = v
		}
	}
	if vars[EnvHome] != m.Home {
		return false
	}
	if m.Task != "" && vars[EnvTask] != m.Task {
		return false
	}
	if m.Chat != "" && vars[EnvChat] != m.Chat {
		return false
	}
	return true
}

// HomeMark names the home at dir, whose store is the file db: the folder's
// real path and the store file's identity (device and inode where the OS
// has them). A copy of the home has the same records but another path and
// another file, so it gets another mark.
func HomeMark(dir, db string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("home mark: %w", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	fi, err := os.Stat(db)
	if err != nil {
		return "", fmt.Errorf("home mark: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s", abs, fileID(fi))
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}
