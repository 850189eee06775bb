// Package worktree gives a helper task a git worktree of its own, so helpers
// working side by side never edit the same files, and settles it when the
// helper ends: removed when it holds nothing, kept (with its branch) when it
// holds work. It never merges, and never throws work away without force.
//
// Everything goes through the git binary, never prompting for credentials
// and never relying on the person's git identity (nothing here commits).
package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"conch/backend/task"
)

// BranchPrefix starts the name of every branch Conch makes; Remove deletes
// no branch without it.
const BranchPrefix = "conch/"

// Tree is one task's worktree.
type Tree struct {
	Path   string // <root>/<id>
	Branch string // conch/<id>
	Base   string // the commit it started from (HEAD's sha)
	// Repo is the main repository's top level. Rebuilt from a record it is
	// empty, and found again from the worktree while that still exists.
	Repo string
	// Dir is the folder inside the worktree matching the one it was made
	// for, which may be a subfolder of the repository.
	Dir string
	// Env is added to the setup script's environment: the process mark of
	// the task it works for, so healing after a crash finds what it left
	// running.
	Env []string
}

// Add makes <root>/<id> on a new branch conch/<id> from the current HEAD of
// the repository holding dir (a detached HEAD is fine). It returns
// ErrNotRepo outside a repository, ErrNoCommits before the first commit,
// and ErrExists when the folder or the branch is already there. Any number
// of Adds may be called at once: in one repository they take their turn
// (so do Settle and Remove), and each waits out, for a few seconds, a lock
// another git holds there.
func Add(ctx context.Context, dir, root, id string) (Tree, error) {
	if err := checkID(id); err != nil {
		return Tree{}, err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Tree{}, fmt.Errorf("add worktree: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return Tree{}, fmt.Errorf("add worktree: %w", err)
	} else if !fi.IsDir() {
		return Tree{}, fmt.Errorf("add worktree: %s is not a folder", dir)
	}
	// One call: where the repository is, and HEAD's commit, which --verify
	// -q leaves out (exit 1) when there is none yet.
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel", "--show-prefix", "--git-common-dir",
		"--verify", "--quiet", "HEAD^{commit}")
	if notRepo(err) {
		return Tree{}, fmt.Errorf("add worktree for %s: %w", dir, ErrNotRepo)
	}
	noCommits := exitCode(err) == 1
	if err != nil && !noCommits {
		return Tree{}, fmt.Errorf("add worktree for %s: %w", dir, err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 3 || len(lines) != 4 && !noCommits {
		return Tree{}, fmt.Errorf("add worktree for %s: git rev-parse said %q", dir, out)
	}
	top, prefix, common := filepath.FromSlash(lines[0]), lines[1], filepath.FromSlash(lines[2])
	if noCommits {
		return Tree{}, fmt.Errorf("add worktree for %s: %w", top, ErrNoCommits)
	}
	base := lines[3]
	root, err = filepath.Abs(root)
	if err != nil {
		return Tree{}, fmt.Errorf("add worktree: %w", err)
	}
	t := Tree{
		Path:   filepath.Join(root, id),
		Branch: BranchPrefix + id,
		Base:   strings.TrimSpace(base),
		Repo:   top,
	}
	// Repo is the main worktree even when dir is in a linked one, which
	// may be gone by the time this tree is removed.
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	if m := mainOf(common); m != "" {
		t.Repo = realPath(m)
	} else if all, err := list(ctx, top); err == nil && len(all) > 0 {
		// A submodule's main worktree, or a bare repository (where git
		// runs in the repository itself).
		t.Repo = all[0].path
	}
	if _, err := os.Lstat(t.Path); err == nil {
		return Tree{}, fmt.Errorf("add worktree: folder %s %w", t.Path, ErrExists)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Tree{}, fmt.Errorf("add worktree: %w", err)
	}
	if err := t.make(ctx, top, common); err != nil {
		return Tree{}, err
	}
	t.Dir = filepath.Join(t.Path, filepath.FromSlash(prefix))
	// dir may hold only untracked files, so the worktree lacks it; an empty
	// folder is no work to git, so making it changes nothing Settle sees.
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		_ = t.Remove(context.WithoutCancel(ctx), true)
		return Tree{}, fmt.Errorf("add worktree: %w", err)
	}
	return t, nil
}

// make makes the branch, then the worktree on it, under the repository's
// lock. Made in one step (worktree add -b), a branch is left behind when
// the worktree part fails; made apart, the branch goes again unless the
// worktree is there.
func (t Tree) make(ctx context.Context, top, common string) error {
	defer lockRepo(common)()
	_, err := gitRetry(ctx, top, "branch", "--quiet", "--no-track", t.Branch, t.Base)
	var g *gitError
	if errors.As(err, &g) && strings.Contains(g.stderr, "already exists") {
		return fmt.Errorf("add worktree: branch %s %w", t.Branch, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("add worktree: make branch %s: %w", t.Branch, err)
	}
	_, err = gitRetry(ctx, top, "worktree", "add", "--quiet", t.Path, t.Branch)
	if err == nil {
		return nil
	}
	// The branch is ours, just made, and checked out nowhere unless git got
	// as far as the folder (a failing post-checkout hook). update-ref,
	// unlike branch -D, reads no worktree entries, which may be what failed,
	// and deletes the branch only while it is still at Base.
	if _, serr := os.Lstat(t.Path); errors.Is(serr, fs.ErrNotExist) {
		_, _ = gitRetry(context.WithoutCancel(ctx), top, "update-ref", "-d", "refs/heads/"+t.Branch, t.Base)
	}
	if errors.As(err, &g) && strings.Contains(g.stderr, "already registered") {
		return fmt.Errorf("add worktree: %s %w as a worktree git has not pruned", t.Path, ErrExists)
	}
	return fmt.Errorf("add worktree %s: %w", t.Path, err)
}

// checkID refuses an id that would not make one plain folder name and a
// valid branch name; task ids never come close.
func checkID(id string) error {
	ok := id != "" && !strings.HasPrefix(id, ".") && !strings.HasPrefix(id, "-") &&
		!strings.HasSuffix(id, ".") && !strings.HasSuffix(id, ".lock") && !strings.Contains(id, "..")
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("add worktree: %q is not a usable task id (letters, digits, '-', '_' and '.')", id)
	}
	return nil
}

// mainOf returns the main worktree's folder for the repository whose
// common git dir is common, or "" when it has none that can be told from
// the path alone (a bare repository, a submodule's git dir).
func mainOf(common string) string {
	common = filepath.Clean(common)
	if filepath.Base(common) != ".git" {
		return ""
	}
	return filepath.Dir(common)
}

// FromRecord rebuilds a Tree from a stored task.Worktree, for Remove after a
// restart. The record does not keep the repository, so Repo is left empty
// and found again from the worktree; set it before Remove if the worktree
// may have been deleted by hand, or its branch cannot be cleaned up.
func FromRecord(w task.Worktree) Tree {
	return Tree{Path: w.Path, Branch: w.Branch, Base: w.Base, Dir: w.Path}
}

// present returns ErrMissing unless the worktree's folder is there and is
// still a git worktree (has its .git file).
func (t Tree) present() error {
	if _, err := os.Lstat(t.Path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("worktree %s: %w (deleted by hand?)", t.Path, ErrMissing)
	} else if err != nil {
		return fmt.Errorf("worktree %s: %w", t.Path, err)
	}
	if _, err := os.Lstat(filepath.Join(t.Path, ".git")); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("worktree %s: %w (the folder is no longer a git worktree)", t.Path, ErrMissing)
	} else if err != nil {
		return fmt.Errorf("worktree %s: %w", t.Path, err)
	}
	return nil
}

// gitDir returns the worktree's own git dir, read from its .git file (a
// folder for a main worktree), without running git.
func (t Tree) gitDir() (string, error) {
	dotGit := filepath.Join(t.Path, ".git")
	fi, err := os.Stat(dotGit)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return dotGit, nil
	}
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return "", err
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s does not name a git dir", dotGit)
	}
	dir = filepath.FromSlash(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(t.Path, dir)
	}
	return filepath.Clean(dir), nil
}

// repo returns the folder to run repository-wide commands in: Repo, else
// the main worktree found from this one.
func (t Tree) repo(ctx context.Context) (string, error) {
	if t.Repo != "" {
		return t.Repo, nil
	}
	if err := t.present(); err != nil {
		return "", fmt.Errorf("%w, and its repository is not known", err)
	}
	if gd, err := t.gitDir(); err == nil {
		if b, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
			common := filepath.FromSlash(strings.TrimSpace(string(b)))
			if !filepath.IsAbs(common) {
				common = filepath.Join(gd, common)
			}
			if m := mainOf(common); m != "" {
				return m, nil
			}
		}
	}
	all, err := list(ctx, t.Path)
	if err != nil {
		return "", fmt.Errorf("worktree %s: %w", t.Path, err)
	}
	if len(all) == 0 {
		return "", fmt.Errorf("worktree %s: git lists no worktrees", t.Path)
	}
	// The main worktree, or a bare repository itself.
	return all[0].path, nil
}

// Inspect says what the worktree holds that its base lacks: tracked files
// changed (modified, staged, deleted, unmerged), untracked files (ignored
// ones are not work), commits ahead of and behind Base, and an unfinished
// operation ("rebase", "am", "merge", "cherry-pick", "revert", "bisect").
// A missing worktree gives ErrMissing.
func (t Tree) Inspect(ctx context.Context) (task.WorktreeWork, error) {
	w, _, err := t.inspect(ctx)
	return w, err
}

// inspect is Inspect, also returning the branch HEAD is on ("" when
// detached).
func (t Tree) inspect(ctx context.Context) (task.WorktreeWork, string, error) {
	var w task.WorktreeWork
	if err := t.present(); err != nil {
		return w, "", err
	}
	out, err := git(ctx, t.Path, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all")
	if err != nil {
		return w, "", fmt.Errorf("inspect worktree %s: %w", t.Path, err)
	}
	st := parseStatus(out)
	w.Changed, w.Untracked = st.changed, st.untracked
	if t.Base != "" && st.head != t.Base {
		out, err := git(ctx, t.Path, "rev-list", "--left-right", "--count", t.Base+"...HEAD")
		if err != nil {
			return w, "", fmt.Errorf("inspect worktree %s: %w", t.Path, err)
		}
		if _, err := fmt.Sscan(out, &w.Behind, &w.Ahead); err != nil {
			return w, "", fmt.Errorf("inspect worktree %s: read %q: %w", t.Path, out, err)
		}
	}
	gd, err := t.gitDir()
	if err != nil {
		return w, "", fmt.Errorf("inspect worktree %s: %w", t.Path, err)
	}
	w.Operation = operation(gd)
	return w, st.branch, nil
}

// status is what `git status --porcelain=v2 --branch -z` says.
type status struct {
	head      string // HEAD's sha
	branch    string // the branch HEAD is on, "" when detached
	changed   int    // tracked entries: modified, staged, renamed, unmerged
	untracked int
}

// parseStatus reads `git status --porcelain=v2 --branch -z`. A rename or
// copy ("2") is followed by its old path, which is no entry of its own.
func parseStatus(out string) status {
	var st status
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "# branch.oid "):
			st.head = strings.TrimPrefix(f, "# branch.oid ")
		case strings.HasPrefix(f, "# branch.head "):
			if b := strings.TrimPrefix(f, "# branch.head "); b != "(detached)" {
				st.branch = b
			}
		case strings.HasPrefix(f, "1 "), strings.HasPrefix(f, "u "):
			st.changed++
		case strings.HasPrefix(f, "2 "):
			st.changed++
			i++
		case strings.HasPrefix(f, "? "):
			st.untracked++
		}
	}
	return st
}

// operation names the unfinished operation whose marker is in gitDir, the
// worktree's own git dir, or "" when there is none.
func operation(gitDir string) string {
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(gitDir, name))
		return err == nil
	}
	switch {
	case exists("rebase-merge"):
		return "rebase"
	case exists("rebase-apply"):
		if exists(filepath.Join("rebase-apply", "applying")) {
			return "am"
		}
		return "rebase"
	case exists("MERGE_HEAD"):
		return "merge"
	case exists("CHERRY_PICK_HEAD"):
		return "cherry-pick"
	case exists("REVERT_HEAD"):
		return "revert"
	case exists(filepath.Join("sequencer", "todo")):
		// A series of picks stopped between two of them.
		todo, _ := os.ReadFile(filepath.Join(gitDir, "sequencer", "todo"))
		if strings.HasPrefix(string(todo), "revert") {
			return "revert"
		}
		return "cherry-pick"
	case exists("BISECT_LOG"):
		return "bisect"
	}
	return ""
}

// hasWork reports whether w is anything Settle must keep.
func hasWork(w task.WorktreeWork) bool {
	return w.Changed > 0 || w.Untracked > 0 || w.Ahead > 0 || w.Operation != ""
}

// describe says in a few words what w holds, for ErrHasWork.
func describe(w task.WorktreeWork, branchAhead int) string {
	var parts []string
	add := func(n int, one, many string) {
		if n == 1 {
			parts = append(parts, "1 "+one)
		} else if n > 1 {
			parts = append(parts, strconv.Itoa(n)+" "+many)
		}
	}
	add(w.Changed, "changed file", "changed files")
	add(w.Untracked, "untracked file", "untracked files")
	add(max(w.Ahead, branchAhead), "commit", "commits")
	if w.Operation != "" {
		parts = append(parts, "an unfinished "+w.Operation)
	}
	return strings.Join(parts, ", ")
}

// branchAhead counts the branch's commits that Base lacks, and says
// whether the branch is there at all. onBranch is the branch HEAD is on
// and headAhead its count, which is the answer when HEAD is on this branch;
// otherwise (the helper switched away) git is asked. Without a Base nothing
// can be proved, so the branch counts as holding work.
func (t Tree) branchAhead(ctx context.Context, repo, onBranch string, headAhead int) (int, bool, error) {
	if onBranch == t.Branch && t.Base != "" {
		return headAhead, true, nil
	}
	out, err := git(ctx, repo, "for-each-ref", "--format=%(objectname)", "refs/heads/"+t.Branch)
	if err != nil {
		return 0, false, err
	}
	sha := strings.TrimSpace(out)
	switch {
	case sha == "":
		return 0, false, nil
	case t.Base == "":
		return 1, true, nil
	case sha == t.Base:
		return 0, true, nil
	}
	out, err = git(ctx, repo, "rev-list", "--count", t.Base+".."+sha)
	if err != nil {
		return 0, true, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	return n, true, err
}

// record is the task.Worktree for t.
func (t Tree) record(kept bool, w task.WorktreeWork) task.Worktree {
	return task.Worktree{Path: t.Path, Branch: t.Branch, Base: t.Base, Kept: kept, Work: w}
}

// Settle is called when the helper ends: with no edits, no commits and no
// unfinished operation it removes the worktree and the branch (kept=false);
// otherwise it keeps both (kept=true). It returns the record to store
// either way, also alongside an error, in which case whatever could not be
// checked or removed is kept. If the helper left commits on the branch but
// moved HEAD away from them, Work.Ahead counts the branch's commits.
//
// A worktree deleted by hand gives ErrMissing, after git's record of it is
// pruned and its branch removed unless the branch holds commits (then
// ErrHasWork too, and kept=true); a locked one gives ErrLocked, kept=true.
func (t Tree) Settle(ctx context.Context) (task.Worktree, error) {
	w, onBranch, err := t.inspect(ctx)
	if errors.Is(err, ErrMissing) {
		err = t.Remove(ctx, false)
		// The folder is gone either way; what can be kept is the branch.
		kept := true
		if repo, rerr := t.repo(ctx); rerr == nil {
			if n, ok, berr := t.branchAhead(ctx, repo, "", 0); berr == nil {
				kept, w.Ahead = ok, n
			}
		}
		return t.record(kept, w), err
	}
	if err != nil {
		return t.record(true, w), fmt.Errorf("settle: %w", err)
	}
	if hasWork(w) {
		return t.record(true, w), nil
	}
	repo, err := t.repo(ctx)
	if err != nil {
		return t.record(true, w), fmt.Errorf("settle: %w", err)
	}
	n, _, err := t.branchAhead(ctx, repo, onBranch, w.Ahead)
	if err != nil {
		return t.record(true, w), fmt.Errorf("settle: %w", err)
	}
	if n > 0 {
		w.Ahead = n
		return t.record(true, w), nil
	}
	if err := t.removeTree(ctx, repo); err != nil {
		return t.record(true, w), fmt.Errorf("settle: %w", err)
	}
	return t.record(false, w), nil
}

// Remove removes the worktree and its branch. With work in either it
// refuses with ErrHasWork unless force is true (the person confirmed). A
// locked worktree gives ErrLocked and is left as it is, force or not. A
// worktree deleted by hand gives ErrMissing after git's record of it is
// pruned and its branch removed (a branch holding commits only with force,
// else ErrHasWork too); the caller can take plain ErrMissing as removed.
// Remove never deletes files itself: git does, and only in a folder it
// knows as one of the repository's worktrees.
func (t Tree) Remove(ctx context.Context, force bool) error {
	if !strings.HasPrefix(t.Branch, BranchPrefix) {
		return fmt.Errorf("remove worktree %s: branch %q is not one Conch made", t.Path, t.Branch)
	}
	repo, err := t.repo(ctx)
	if err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	if missing := t.present(); missing != nil {
		return t.removeMissing(ctx, repo, force, missing)
	}
	if !force {
		if err := t.locked(); err != nil {
			return err
		}
		w, onBranch, err := t.inspect(ctx)
		if err != nil {
			return fmt.Errorf("remove worktree: %w", err)
		}
		n, _, err := t.branchAhead(ctx, repo, onBranch, w.Ahead)
		if err != nil {
			return fmt.Errorf("remove worktree %s: %w", t.Path, err)
		}
		if hasWork(w) || n > 0 {
			return fmt.Errorf("remove worktree %s: it holds %s: %w", t.Path, describe(w, n), ErrHasWork)
		}
	}
	return t.removeTree(ctx, repo)
}

// locked returns ErrLocked, with git's reason, when the worktree is locked.
func (t Tree) locked() error {
	gd, err := t.gitDir()
	if err != nil {
		return fmt.Errorf("worktree %s: %w", t.Path, err)
	}
	b, err := os.ReadFile(filepath.Join(gd, "locked"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return lockedError(t.Path, strings.TrimSpace(string(b)))
}

func lockedError(path, reason string) error {
	if reason != "" {
		reason = " (" + reason + ")"
	}
	return fmt.Errorf("worktree %s: %w%s; unlock it with `git worktree unlock %s` first", path, ErrLocked, reason, path)
}

// removeTree removes a worktree that is there, and its branch. Work was
// checked by the caller (or the person confirmed): --force is what lets git
// remove ignored files, submodules and unfinished operations.
func (t Tree) removeTree(ctx context.Context, repo string) error {
	if err := t.locked(); err != nil {
		return err
	}
	if realPath(t.Path) == realPath(repo) {
		return fmt.Errorf("remove worktree: %s is the repository itself", t.Path)
	}
	if _, err := gitLocked(ctx, repo, "worktree", "remove", "--force", t.Path); err != nil {
		return fmt.Errorf("remove worktree %s: %w", t.Path, err)
	}
	return t.deleteBranch(ctx, repo)
}

// removeMissing cleans up after a worktree deleted by hand: git's record of
// it is pruned, and its branch is deleted unless it holds commits and
// force is false.
func (t Tree) removeMissing(ctx context.Context, repo string, force bool, missing error) error {
	all, err := list(ctx, repo)
	if err != nil {
		return fmt.Errorf("remove worktree: %w; %w", missing, err)
	}
	for _, l := range all {
		if l.locked && realPath(l.path) == realPath(t.Path) {
			// git keeps a locked worktree's record though its folder is
			// gone (it may be on a drive that is not plugged in).
			return fmt.Errorf("remove worktree: %w", lockedError(t.Path, l.reason))
		}
	}
	if _, err := gitLocked(ctx, repo, "worktree", "prune"); err != nil {
		return fmt.Errorf("remove worktree: %w; pruning it failed: %w", missing, err)
	}
	n, ok, err := t.branchAhead(ctx, repo, "", 0)
	if err != nil {
		return fmt.Errorf("remove worktree: %w; %w", missing, err)
	}
	if !ok {
		return fmt.Errorf("remove worktree: %w; pruned what git kept of it", missing)
	}
	if n > 0 && !force {
		return fmt.Errorf("remove worktree: %w; its branch %s holds %s: %w",
			missing, t.Branch, describe(task.WorktreeWork{}, n), ErrHasWork)
	}
	if err := t.deleteBranch(ctx, repo); err != nil {
		return fmt.Errorf("remove worktree: %w; %w", missing, err)
	}
	return fmt.Errorf("remove worktree: %w; pruned what git kept of it and removed branch %s", missing, t.Branch)
}

// deleteBranch deletes the branch if it is there. git refuses one that is
// checked out in another worktree, which is what we want.
func (t Tree) deleteBranch(ctx context.Context, repo string) error {
	_, err := gitLocked(ctx, repo, "branch", "--quiet", "-D", t.Branch)
	var g *gitError
	if errors.As(err, &g) && strings.Contains(g.stderr, "not found") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete branch %s: %w", t.Branch, err)
	}
	return nil
}
