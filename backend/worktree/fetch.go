package worktree

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Fetched is what Fetch brought into a clone.
type Fetched struct {
	// Repo is the clone's top folder; Branch the branch made or moved
	// there.
	Repo, Branch string
	// Commits are how many commits the branch has beyond base.
	Commits int
}

// ErrNoClone is a folder with no clone of the repository to fetch into.
var ErrNoClone = errors.New("no clone of that repository here")

// Fetch runs git fetch in the repository holding dir, bringing branch
// from url (env says how git reaches it) into a branch of the same name
// there: it never merges, and never moves a branch that has work of its
// own (not a fast-forward) or is checked out. base is a commit the clone
// must have (where the branch started): a clone without it is not one of
// the same repository, and nothing is fetched.
func Fetch(ctx context.Context, dir, url, branch, base string, env []string) (Fetched, error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		if notRepo(err) {
			return Fetched{}, fmt.Errorf("%w: %s is not in a git repository", ErrNoClone, dir)
		}
		return Fetched{}, err
	}
	repo := strings.TrimSpace(top)
	if base != "" {
		if _, err := git(ctx, repo, "cat-file", "-e", base+"^{commit}"); err != nil {
			return Fetched{}, fmt.Errorf("%w: %s does not have the commit the branch started from (%.12s), so it is not a clone of the same repository", ErrNoClone, repo, base)
		}
	}
	if !strings.HasPrefix(branch, BranchPrefix) || strings.ContainsAny(branch, " ~^:?*[\\") {
		return Fetched{}, fmt.Errorf("%q is not a branch Conch made", branch)
	}
	ref := "refs/heads/" + branch
	cmd := command(ctx, repo, "git", "fetch", "--no-tags", "--", url, ref+":"+ref)
	cmd.Env = environ(append([]string{"LC_ALL=C"}, env...)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return Fetched{}, fmt.Errorf("git fetch: %w", ctx.Err())
	}
	if err != nil {
		return Fetched{}, fmt.Errorf("git fetch of %s did not finish: %s", branch, lastLine(string(out)))
	}
	f := Fetched{Repo: repo, Branch: branch}
	if base != "" {
		if n, err := git(ctx, repo, "rev-list", "--count", base+".."+ref); err == nil {
			f.Commits, _ = strconv.Atoi(strings.TrimSpace(n))
		}
	}
	return f, nil
}

// lastLine is the last line git wrote that says something.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "git gave no reason"
}
