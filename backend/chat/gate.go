package chat

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"conch/backend/task"
	"conch/backend/tool"
)

// Decision is what the permission gate says about one tool call.
type Decision string

const (
	// Run: the call runs without asking.
	Run Decision = "run"
	// AskFirst: the person is asked; the call runs only if they allow it.
	AskFirst Decision = "ask"
	// Refuse: the call does not run; the model is told why.
	Refuse Decision = "refuse"
)

// Gate decides whether a call with effect runs, asks or is refused in mode.
// Plan refuses every side effect; reading (effect none) always runs, even
// in a tainted chat. Otherwise a tainted chat asks before any side effect,
// whatever its mode: ask asks for every effect, edits lets edits run and
// asks for commands and network, auto asks for nothing. An unknown mode
// asks and an unknown effect counts as network, so a mistake errs towards
// asking.
func Gate(mode task.Mode, effect tool.Effect, tainted bool) Decision {
	if !slices.Contains(tool.Effects, effect) {
		effect = tool.Network
	}
	if effect == tool.None {
		return Run
	}
	if mode == task.Plan {
		return Refuse
	}
	if tainted {
		return AskFirst
	}
	switch mode {
	case task.Auto:
		return Run
	case task.Edits:
		if effect == tool.Edit {
			return Run
		}
	}
	return AskFirst
}

// Taints reports whether a call brings outside content into the chat, and
// says what, for the notice the person reads. The guard is a simple,
// deliberately wide heuristic:
//
//   - fetch_url always taints: it reads a web page.
//   - run_command taints when the command reaches the network: it names a
//     network program (curl, wget, ssh, …), a URL, or a package or source
//     fetch (git clone/fetch/pull, npm/pnpm/yarn install or add, npx,
//     pip install, go get or go mod download, cargo install, apt-get, brew,
//     docker pull/run, …).
//   - run_command taints when it names a path outside the chat's folder
//     (absolute, ~ or ..), except /dev/null and the like: its output may
//     hold what such a file says.
//
// The file tools need no rule: they refuse paths outside the folder.
func Taints(name string, args json.RawMessage, dir string) (bool, string) {
	switch name {
	case "fetch_url":
		var a struct {
			URL string `json:"url"`
		}
		_ = json.Unmarshal(args, &a)
		return true, "it fetched " + a.URL
	case "run_command":
		var a struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(args, &a)
		if why := reachesNetwork(a.Command); why != "" {
			return true, "a command reached the network (" + why + ")"
		}
		if p := outsidePath(a.Command, dir); p != "" {
			return true, "a command read " + p + ", outside the chat's folder"
		}
	}
	return false, ""
}

// networkPrograms reach the network whatever their arguments.
var networkPrograms = map[string]bool{
	"curl": true, "wget": true, "ssh": true, "scp": true, "sftp": true, "rsync": true, "nc": true,
	"ncat": true, "netcat": true, "telnet": true, "ftp": true, "http": true, "https": true,
	"aria2c": true, "npx": true, "pnpx": true, "bunx": true, "uvx": true,
}

// networkSubcommands reach the network when the program is followed by one
// of these words.
var networkSubcommands = map[string][]string{
	"git":     {"clone", "fetch", "pull", "push", "ls-remote", "submodule"},
	"npm":     {"install", "i", "ci", "add", "update", "upgrade", "exec", "publish"},
	"pnpm":    {"install", "i", "add", "update", "dlx"},
	"yarn":    {"install", "add", "upgrade", "dlx"},
	"bun":     {"install", "i", "add", "update", "x"},
	"pip":     {"install", "download"},
	"pip3":    {"install", "download"},
	"uv":      {"pip", "add", "sync", "tool"},
	"poetry":  {"install", "add", "update"},
	"go":      {"get", "install", "mod"},
	"cargo":   {"install", "fetch", "update", "add", "publish"},
	"gem":     {"install", "update"},
	"apt":     {"install", "update", "upgrade"},
	"apt-get": {"install", "update", "upgrade"},
	"brew":    {"install", "update", "upgrade"},
	"docker":  {"pull", "run", "build", "push"},
	"podman":  {"pull", "run", "build", "push"},
}

// words splits a command at spaces and shell punctuation; quoting is
// ignored, which only makes the guard wider.
func words(command string) []string {
	return strings.FieldsFunc(command, func(r rune) bool {
		return strings.ContainsRune(" \t\n;|&()<>`'\"=", r)
	})
}

// reachesNetwork names what in command reaches the network, or "".
func reachesNetwork(command string) string {
	if strings.Contains(command, "http://") || strings.Contains(command, "https://") {
		return "a URL"
	}
	ws := words(command)
	for i, w := range ws {
		base := filepath.Base(w)
		if networkPrograms[base] {
			return base
		}
		if subs, ok := networkSubcommands[base]; ok {
			// The subcommand may follow options and their values
			// (git -C dir fetch): look a few words on.
			for _, next := range ws[i+1 : min(len(ws), i+4)] {
				if slices.Contains(subs, next) {
					return base + " " + next
				}
			}
		}
	}
	return ""
}

// harmlessPaths are outside every folder but hold nothing to read.
var harmlessPaths = []string{"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/urandom", "/dev/random"}

// outsidePath returns the first word of command that names a path outside
// dir, or "".
func outsidePath(command, dir string) string {
	for _, w := range words(command) {
		p := w
		switch {
		case strings.HasPrefix(p, "~"):
			return w
		case filepath.IsAbs(p):
		case p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../"):
			p = filepath.Join(dir, p)
		default:
			continue
		}
		p = filepath.Clean(p)
		if slices.Contains(harmlessPaths, p) {
			continue
		}
		if rel, err := filepath.Rel(dir, p); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return w
		}
	}
	return ""
}
