package worktree

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// repoLocks holds one mutex per repository, keyed by the real path of its
// common git dir (the main repository's .git, or a bare repository), so a
// linked worktree and its main one share a lock and two repositories never
// wait for each other. git reads every entry of .git/worktrees while it
// adds, lists, prunes or removes one, and fails on an entry that another
// add is half-way through making: six helpers of one delegate, started at
// once, each adding its worktree, would otherwise trip over each other.
// The map only grows by the repositories Conch has made worktrees in.
var repoLocks sync.Map // string -> *sync.Mutex

// lockRepo locks the repository whose common git dir is common and
// returns the unlock.
func lockRepo(common string) func() {
	v, _ := repoLocks.LoadOrStore(realPath(common), new(sync.Mutex))
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// commonDir returns the common git dir of the repository holding dir, or
// dir itself when git cannot say (the command that follows then fails on
// its own, with git's words).
func commonDir(ctx context.Context, dir string) string {
	out, err := git(ctx, dir, "rev-parse", "--git-common-dir")
	common := filepath.FromSlash(strings.TrimSpace(out))
	if err != nil || common == "" {
		return dir
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	return common
}

// gitLocked runs git in dir under its repository's lock, waiting out
// another process's lock (see gitRetry).
func gitLocked(ctx context.Context, dir string, args ...string) (string, error) {
	defer lockRepo(commonDir(ctx, dir))()
	return gitRetry(ctx, dir, args...)
}

// lockWait bounds how long gitRetry waits out a lock another process holds.
const lockWait = 5 * time.Second

// gitRetry runs git, and again while it fails only because another
// process holds one of the repository's locks for a moment (the person's
// own git, a helper's commit in its worktree, another Conch on the same
// repository): repoLocks orders Conch's own commands, not theirs. git takes
// its locks before it changes anything, so running the same command again
// is safe.
func gitRetry(ctx context.Context, dir string, args ...string) (string, error) {
	deadline := time.Now().Add(lockWait)
	pause := 25 * time.Millisecond
	for {
		out, err := git(ctx, dir, args...)
		if err == nil || !transient(err) || time.Now().Add(pause).After(deadline) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(pause):
		}
		pause = min(2*pause, 400*time.Millisecond)
	}
}

// transient reports whether git failed on a lock another process holds, or
// on a worktree entry another process is half-way through making.
func transient(err error) bool {
	var g *gitError
	if !errors.As(err, &g) {
		return false
	}
	s := g.stderr
	return strings.Contains(s, ".lock': File exists") ||
		strings.Contains(s, "could not lock config file") ||
		strings.Contains(s, "failed to read") && strings.Contains(s, "worktrees")
}
