package agentcli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// firstLine returns s's first non-empty line without terminal escape
// codes (a CLI colours its notices), or fallback.
func firstLine(s, fallback string) string {
	for _, line := range strings.Split(plain(s), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return fallback
}

// ansi matches terminal escape sequences: CSI (colours, cursor moves) and
// OSC (titles, links).
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// plain is s without terminal escape codes and carriage returns.
func plain(s string) string {
	return strings.ReplaceAll(ansi.ReplaceAllString(s, ""), "\r", "")
}

// shorten makes a command or a path fit on one line of a step.
func shorten(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

// relPath shows path relative to dir when it lies inside it.
func relPath(dir, path string) string {
	if dir == "" || !filepath.IsAbs(path) {
		return path
	}
	if rel, err := filepath.Rel(dir, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return path
}

// tilde shows dir with the home folder as ~.
func tilde(dir string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || dir == "" {
		return dir
	}
	if dir == home {
		return "~"
	}
	if rel, err := filepath.Rel(home, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return "~/" + filepath.ToSlash(rel)
	}
	return dir
}

// str reads a string field of a JSON object, "" when absent.
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// declinedStep is the step of a refused or declined action, from its
// question: "Run `ls`?" → "Declined: run `ls`".
func declinedStep(detail string) string {
	d := strings.TrimSuffix(detail, "?")
	if d == "" {
		return "Declined"
	}
	return "Declined: " + strings.ToLower(d[:1]) + d[1:]
}

// unwrapShell shows `bash -lc 'go test ./...'` as `go test ./...`.
func unwrapShell(cmd string) string {
	for _, prefix := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/zsh -lc ", "zsh -lc ", "/bin/sh -c ", "sh -c "} {
		if rest, ok := strings.CutPrefix(cmd, prefix); ok {
			if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
				rest = rest[1 : len(rest)-1]
			}
			return rest
		}
	}
	return cmd
}
