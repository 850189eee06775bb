// Package procmark marks the processes Conch starts with the home that
// started them and the task or chat they belong to, and finds them again.
//
// A mark lives in a process's environment, which its children inherit, so a
// grandchild that left its process group still carries it. Healing at start
// ends only what carries this home's mark: a recorded pid alone is reused by
// the OS, and a task id alone is shared by a copy of the home.
package procmark

import (
	"crypto/rand"
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
	// EnvRun names the one command or CLI run a process belongs to, so a
	// stop ends that run's whole tree and nothing else of its chat.
	EnvRun = "CONCH_RUN_ID"
)

// Mark is what a process started by Conch carries. Home is always set;
// Task and Chat name what it works for (a task's own chat has both), Run
// the one command or CLI run that started it.
type Mark struct {
	Home string
	Task string
	Chat string
	Run  string
}

// WithRun is m with a new run id: the mark of one command or CLI run.
func (m Mark) WithRun() Mark {
	m.Run = newID()
	return m
}

// Env returns base without any mark it carried (a Conch started by a task
// must not pass its parent's mark on as its own) and with m's.
func (m Mark) Env(base []string) []string {
	out := make([]string, 0, len(base)+3)
	for _, kv := range base {
		if isMarkVar(kv) {
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
	if m.Run != "" {
		out = append(out, EnvRun+"="+m.Run)
	}
	return out
}

func isMarkVar(kv string) bool {
	for _, k := range []string{EnvHome, EnvTask, EnvChat, EnvRun} {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// Matches reports whether a process environment (NUL-separated, as
// /proc/<pid>/environ holds it) carries m: its home, and its task, chat and
// run where m names them. A mark without a home matches nothing, so a
// caller that forgot to say which home never ends another's processes.
func (m Mark) Matches(environ []byte) bool {
	if m.Home == "" {
		return false
	}
	vars := map[string]string{}
	for _, kv := range strings.Split(string(environ), "\x00") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (k == EnvHome || k == EnvTask || k == EnvChat || k == EnvRun) {
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
	if m.Run != "" && vars[EnvRun] != m.Run {
		return false
	}
	return true
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// HomeMark names the home at dir, whose store is the file db: the folder's
// real path and the store file's identity (device and inode where the OS
// has them). A copy of the home has the same records but another path and
// another file, so it gets another mark. A store that cannot be looked at
// leaves the path alone to tell the homes apart.
func HomeMark(dir, db string) string {
	abs := dir
	if a, err := filepath.Abs(dir); err == nil {
		abs = a
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	id := ""
	if fi, err := os.Stat(db); err == nil {
		id = fileID(fi)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s", abs, id)
	return hex.EncodeToString(h.Sum(nil))[:32]
}
