package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"conch/backend/internal/procgroup"
)

// gitError is a git command that ran and failed; it keeps the exit code so
// callers can tell "no such ref" (1) from a real failure.
type gitError struct {
	args   []string
	code   int
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := fmt.Sprintf("git %s: %v", strings.Join(e.args, " "), e.err)
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode is the exit code of a failed git command, or -1 when err is not
// one (git did not start, or was stopped).
func exitCode(err error) int {
	var g *gitError
	if errors.As(err, &g) {
		return g.code
	}
	return -1
}

// repoEnv are variables that point git at another repository or index; one
// left over from a hook that started Conch would make every command below
// work on the wrong repository.
var repoEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_NAMESPACE", "GIT_PREFIX",
}

// environ is the environment for git and the setup script: the process's
// own, without repoEnv, and never prompting for credentials.
func environ(extra ...string) []string {
	env := make([]string, 0, len(os.Environ())+len(extra)+1)
next:
	for _, kv := range os.Environ() {
		for _, k := range repoEnv {
			if strings.HasPrefix(kv, k+"=") {
				continue next
			}
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0")
	return append(env, extra...)
}

// command prepares name in its own process group, so stopping ctx also ends
// whatever it started (a hook, an install).
func command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = procgroup.Attr()
	cmd.Cancel = func() error {
		procgroup.Signal(cmd.Process.Pid, syscall.SIGKILL)
		return nil
	}
	// A child holding the pipes open must not hold the call open once the
	// command itself has ended.
	cmd.WaitDelay = time.Second
	return cmd
}

// git runs git with args in dir and returns its standard output.
// LC_ALL=C keeps its messages in English, since notRepo reads one;
// GIT_OPTIONAL_LOCKS=0 keeps status from taking the index lock while a
// helper may be working in the same worktree.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := command(ctx, dir, "git", args...)
	cmd.Env = environ("LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("git %s: %w", args[0], ctx.Err())
	}
	if err != nil {
		g := &gitError{args: args, code: -1, stderr: strings.TrimSpace(stderr.String()), err: err}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			g.code = exit.ExitCode()
		}
		return stdout.String(), g
	}
	return stdout.String(), nil
}

// notRepo reports whether err is git saying dir is in no repository's
// working tree (outside any, or inside a git dir).
func notRepo(err error) bool {
	var g *gitError
	return errors.As(err, &g) && (strings.Contains(g.stderr, "not a git repository") ||
		strings.Contains(g.stderr, "must be run in a work tree"))
}

// realPath resolves symlinks in p as far as it exists, so paths from git
// (which are resolved) compare equal to ours (macOS's /var is /private/var).
func realPath(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(p)
	if dir == "" || filepath.Clean(dir) == p {
		return p
	}
	return filepath.Join(realPath(dir), base)
}

// listing is one entry of `git worktree list --porcelain`.
type listing struct {
	path   string
	locked bool
	reason string // why it is locked, when git was told
}

// list returns the repository's worktrees, the main one first.
func list(ctx context.Context, dir string) ([]listing, error) {
	out, err := gitLocked(ctx, dir, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var all []listing
	for _, block := range strings.Split(out, "\n\n") {
		var l listing
		for _, line := range strings.Split(block, "\n") {
			key, val, _ := strings.Cut(line, " ")
			switch key {
			case "worktree":
				l.path = filepath.FromSlash(val)
			case "locked":
				l.locked, l.reason = true, val
			}
		}
		if l.path != "" {
			all = append(all, l)
		}
	}
	return all, nil
}
