package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"conch/backend/task"
)

// SalvagePrefix starts the ref that holds a helper's salvaged work:
// refs/conch/salvage/<task id>.
const SalvagePrefix = "refs/conch/salvage/"

// maxListed bounds the files and commits a salvage record lists.
const maxListed = 50

// Salvage records what a helper that did not finish left in its worktree,
// before anything could drop it: its uncommitted changes (tracked and
// untracked, as git add -A would take them, ignored files left out) become
// a commit on refs/conch/salvage/<id>, made with an index of its own, so
// the branch, the index and the working tree are left exactly as they
// were. The record lists the changed files and the commits the branch has
// that Base lacks. With nothing uncommitted there is no ref, only the
// commits. A missing worktree gives ErrMissing.
func (t Tree) Salvage(ctx context.Context) (task.Salvage, error) {
	var s task.Salvage
	if err := t.present(); err != nil {
		return s, err
	}
	id := strings.TrimPrefix(t.Branch, BranchPrefix)
	if err := checkID(id); err != nil {
		return s, fmt.Errorf("salvage: %w", err)
	}
	out, err := git(ctx, t.Path, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return s, fmt.Errorf("salvage %s: %w", t.Path, err)
	}
	s.Files = changedFiles(out)
	if t.Base != "" {
		log, err := git(ctx, t.Path, "log", "--format=%h %s", "--max-count="+fmt.Sprint(maxListed), t.Base+"..HEAD")
		if err != nil {
			return s, fmt.Errorf("salvage %s: %w", t.Path, err)
		}
		for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
			if l != "" {
				s.Commits = append(s.Commits, l)
			}
		}
	}
	if len(s.Files) == 0 {
		return s, nil
	}
	gd, err := t.gitDir()
	if err != nil {
		return s, fmt.Errorf("salvage %s: %w", t.Path, err)
	}
	index := filepath.Join(gd, "conch-salvage-index")
	defer os.Remove(index)
	_ = os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	head := "HEAD"
	if _, err := gitWith(ctx, t.Path, env, "rev-parse", "--verify", "--quiet", "HEAD"); err != nil {
		head = "" // an unborn HEAD: the salvage commit has no parent
	}
	if head != "" {
		if _, err := gitWith(ctx, t.Path, env, "read-tree", head); err != nil {
			return s, fmt.Errorf("salvage %s: %w", t.Path, err)
		}
	}
	if _, err := gitWith(ctx, t.Path, env, "add", "--all", "--", ":/"); err != nil {
		return s, fmt.Errorf("salvage %s: %w", t.Path, err)
	}
	tree, err := gitWith(ctx, t.Path, env, "write-tree")
	if err != nil {
		return s, fmt.Errorf("salvage %s: %w", t.Path, err)
	}
	args := []string{"commit-tree", strings.TrimSpace(tree), "-m", "Conch salvaged the unfinished work of task " + id}
	if head != "" {
		args = append(args, "-p", head)
	}
	// Conch's own identity: the person's git config need have none.
	who := []string{"GIT_AUTHOR_NAME=Conch", "GIT_AUTHOR_EMAIL=conch@localhost", "GIT_COMMITTER_NAME=Conch", "GIT_COMMITTER_EMAIL=conch@localhost"}
	commit, err := gitWith(ctx, t.Path, who, args...)
	if err != nil {
		return s, fmt.Errorf("salvage %s: %w", t.Path, err)
	}
	s.Commit = strings.TrimSpace(commit)
	if _, err := git(ctx, t.Path, "update-ref", "-m", "conch salvage", SalvagePrefix+id, s.Commit); err != nil {
		return s, fmt.Errorf("salvage %s: %w", t.Path, err)
	}
	s.Ref = SalvagePrefix + id
	return s, nil
}

// Repository is the main repository's top level, found from the worktree
// while it exists.
func (t Tree) Repository(ctx context.Context) (string, error) { return t.repo(ctx) }

// DropSalvage deletes the task's salvage ref, if there is one, in the
// repository holding dir.
func DropSalvage(ctx context.Context, dir, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	_, err := git(ctx, dir, "update-ref", "-d", SalvagePrefix+id)
	var g *gitError
	if errors.As(err, &g) && strings.Contains(g.stderr, "does not exist") {
		return nil
	}
	return err
}

// changedFiles reads `git status --porcelain=v1 -z`: each entry's path
// (a rename's new one) in path order, at most maxListed, then "and N
// more".
func changedFiles(out string) []string {
	var files []string
	fields := strings.Split(out, "\x00")
	n := 0
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		if f[0] == 'R' || f[0] == 'C' {
			i++ // the old path follows
		}
		if n++; n <= maxListed {
			files = append(files, f[3:])
		}
	}
	sort.Strings(files)
	if n > maxListed {
		files = append(files, fmt.Sprintf("and %d more", n-maxListed))
	}
	return files
}

// gitWith is git with extra environment (an index of its own, an identity).
func gitWith(ctx context.Context, dir string, extra []string, args ...string) (string, error) {
	cmd := command(ctx, dir, "git", args...)
	cmd.Env = environ(append([]string{"LC_ALL=C"}, extra...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		return stdout.String(), &gitError{args: args, code: exitCode(err), stderr: strings.TrimSpace(stderr.String()), err: err}
	}
	return stdout.String(), nil
}
