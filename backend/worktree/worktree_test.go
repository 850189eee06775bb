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
	"testing"
	"time"

	"conch/backend/task"
)

// template is a repository with one commit (a.txt, sub/inner/b.txt,
// .gitignore), made once and copied for each test.
var template string

// TestMain keeps the person's git config out of every test: no identity,
// no hooks, no signing come from it. Commits name their author with -c.
func TestMain(m *testing.M) {
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	// A temp folder inside someone's repository must not make "not a
	// repository" tests find that one.
	os.Setenv("GIT_CEILING_DIRECTORIES", os.TempDir())
	tmp, err := os.MkdirTemp("", "conch-worktree")
	if err != nil {
		panic(err)
	}
	template = filepath.Join(tmp, "repo")
	err = makeTemplate(template)
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, "make template repository:", err)
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

func makeTemplate(repo string) error {
	files := map[string]string{
		"a.txt":           "one\n",
		"c.txt":           "three\n",
		"sub/inner/b.txt": "two\n",
		".gitignore":      "node_modules/\n",
	}
	for name, text := range files {
		path := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "--template="},
		{"add", "."},
		{"commit", "-q", "-m", "first"},
	} {
		if out, err := tryGit(repo, args...); err != nil {
			return fmt.Errorf("git %s: %w\n%s", args[0], err, out)
		}
	}
	return nil
}

// run runs git in dir for a test, failing it on error.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := tryGit(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// tryGit runs git in dir with a fixed identity and returns its combined
// output.
func tryGit(dir string, args ...string) (string, error) {
	args = append([]string{"-c", "user.name=Conch Test", "-c", "user.email=test@conch.invalid",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func write(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// bundle is one test's repository and where its worktrees go.
type bundle struct {
	repo string // top level, symlinks resolved, as git reports it
	root string // <home>/worktrees
}

// setup copies the template repository for one test and commits extra
// files on top (a name ending in worktree-setup is made executable).
func setup(t *testing.T, extra map[string]string) bundle {
	t.Helper()
	t.Parallel()
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	if err := os.CopyFS(repo, os.DirFS(template)); err != nil {
		t.Fatal(err)
	}
	if len(extra) > 0 {
		for name, text := range extra {
			mode := os.FileMode(0o644)
			if strings.HasSuffix(name, "worktree-setup") {
				mode = 0o755
			}
			write(t, filepath.Join(repo, filepath.FromSlash(name)), text, mode)
		}
		run(t, repo, "add", ".")
		run(t, repo, "commit", "-q", "-m", "extra")
	}
	return bundle{repo: realPath(repo), root: filepath.Join(tmp, "home", "worktrees")}
}

func (b bundle) add(t *testing.T, id string) Tree {
	t.Helper()
	tr, err := Add(context.Background(), b.repo, b.root, id)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func branchExists(t *testing.T, repo, branch string) bool {
	t.Helper()
	_, err := tryGit(repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// listed reports whether git still knows path as a worktree of repo.
func listed(t *testing.T, repo, path string) bool {
	return strings.Contains(run(t, repo, "worktree", "list", "--porcelain"), "worktree "+realPath(path)+"\n")
}

func TestAddThenSettleUntouchedRemovesWorktreeAndBranch(t *testing.T) {
	b := setup(t, nil)
	tr := b.add(t, "t1")
	if tr.Path != filepath.Join(b.root, "t1") || tr.Branch != "conch/t1" || tr.Repo != b.repo {
		t.Fatalf("tree = %+v", tr)
	}
	if head := run(t, b.repo, "rev-parse", "HEAD"); tr.Base != head {
		t.Fatalf("base = %q, want HEAD %q", tr.Base, head)
	}
	if !exists(filepath.Join(tr.Path, "a.txt")) || !branchExists(t, b.repo, "conch/t1") {
		t.Fatal("worktree or branch not made")
	}
	if got := run(t, tr.Path, "branch", "--show-current"); got != "conch/t1" {
		t.Fatalf("worktree is on %q", got)
	}

	rec, err := tr.Settle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Kept || rec.Path != tr.Path || rec.Branch != tr.Branch || rec.Base != tr.Base {
		t.Fatalf("record = %+v", rec)
	}
	if exists(tr.Path) || branchExists(t, b.repo, "conch/t1") || listed(t, b.repo, tr.Path) {
		t.Fatal("worktree or branch left behind")
	}
}

func TestSettleKeepsWork(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, tr Tree)
		work task.WorktreeWork
		want string // what ErrHasWork says it holds
	}{
		{"edit", func(t *testing.T, tr Tree) {
			write(t, filepath.Join(tr.Path, "a.txt"), "changed\n", 0o644)
		}, task.WorktreeWork{Changed: 1}, "1 changed file"},
		{"staged deletion", func(t *testing.T, tr Tree) {
			run(t, tr.Path, "rm", "-q", "a.txt")
		}, task.WorktreeWork{Changed: 1}, "1 changed file"},
		{"untracked", func(t *testing.T, tr Tree) {
			write(t, filepath.Join(tr.Path, "new", "c.txt"), "new\n", 0o644)
		}, task.WorktreeWork{Untracked: 1}, "1 untracked file"},
		{"commit", func(t *testing.T, tr Tree) {
			write(t, filepath.Join(tr.Path, "a.txt"), "committed\n", 0o644)
			run(t, tr.Path, "commit", "-q", "-am", "helper's work")
		}, task.WorktreeWork{Ahead: 1}, "1 commit"},
		{"commit the worktree's HEAD moved away from", func(t *testing.T, tr Tree) {
			write(t, filepath.Join(tr.Path, "a.txt"), "committed\n", 0o644)
			run(t, tr.Path, "commit", "-q", "-am", "helper's work")
			run(t, tr.Path, "checkout", "-q", "--detach", tr.Base)
		}, task.WorktreeWork{Ahead: 1}, "1 commit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, nil)
			tr := b.add(t, "t1")
			tc.do(t, tr)
			rec, err := tr.Settle(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !rec.Kept || !exists(tr.Path) || !branchExists(t, b.repo, tr.Branch) {
				t.Fatalf("work not kept: %+v", rec)
			}
			if rec.Work != tc.work {
				t.Fatalf("work = %+v, want %+v", rec.Work, tc.work)
			}
			err = tr.Remove(context.Background(), false)
			if !errors.Is(err, ErrHasWork) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Remove without force = %v, want ErrHasWork naming %q", err, tc.want)
			}
		})
	}
}

func TestInspectCounts(t *testing.T) {
	b := setup(t, nil)
	tr := b.add(t, "t1")
	write(t, filepath.Join(tr.Path, "a.txt"), "edited\n", 0o644)
	run(t, tr.Path, "mv", "c.txt", "renamed.txt")
	write(t, filepath.Join(tr.Path, "u1"), "x", 0o644)
	write(t, filepath.Join(tr.Path, "sub", "u2"), "x", 0o644)
	write(t, filepath.Join(tr.Path, "node_modules", "ignored"), "x", 0o644)
	w, err := tr.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Changed != 2 || w.Untracked != 2 || w.Ahead != 0 || w.Behind != 0 || w.Operation != "" {
		t.Fatalf("work = %+v, want 2 changed (edit, rename), 2 untracked", w)
	}

	run(t, tr.Path, "add", "-A")
	run(t, tr.Path, "commit", "-q", "-m", "one")
	run(t, tr.Path, "commit", "-q", "--allow-empty", "-m", "two")
	w, err = tr.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Changed != 0 || w.Untracked != 0 || w.Ahead != 2 || w.Behind != 0 {
		t.Fatalf("after commits work = %+v, want ahead 2", w)
	}

	// Reset below the base: behind, not ahead.
	run(t, b.repo, "commit", "-q", "--allow-empty", "-m", "later on main")
	tr2 := b.add(t, "t2")
	run(t, tr2.Path, "reset", "-q", "--hard", "HEAD~1")
	w, err = tr2.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Ahead != 0 || w.Behind != 1 {
		t.Fatalf("after reset work = %+v, want behind 1", w)
	}
}

func TestSettleRemovesWorktreeHoldingOnlyIgnoredFiles(t *testing.T) {
	b := setup(t, nil)
	tr := b.add(t, "t1")
	write(t, filepath.Join(tr.Path, "node_modules", "dep", "index.js"), "x", 0o644)
	rec, err := tr.Settle(context.Background())
	if err != nil || rec.Kept {
		t.Fatalf("Settle = %+v, %v; ignored files are no work", rec, err)
	}
	if exists(tr.Path) || branchExists(t, b.repo, tr.Branch) {
		t.Fatal("worktree or branch left behind")
	}
}

func TestAddFromSubfolderMapsDir(t *testing.T) {
	b := setup(t, nil)
	tr, err := Add(context.Background(), filepath.Join(b.repo, "sub", "inner"), b.root, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Repo != b.repo {
		t.Fatalf("repo = %q, want %q", tr.Repo, b.repo)
	}
	if want := filepath.Join(tr.Path, "sub", "inner"); tr.Dir != want {
		t.Fatalf("dir = %q, want %q", tr.Dir, want)
	}
	if !exists(filepath.Join(tr.Dir, "b.txt")) {
		t.Fatal("dir does not hold the subfolder's files")
	}

	// A subfolder with only untracked files is made, and is no work.
	write(t, filepath.Join(b.repo, "scratch", "notes.txt"), "x", 0o644)
	tr2, err := Add(context.Background(), filepath.Join(b.repo, "scratch"), b.root, "t2")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(tr2.Dir); err != nil || !fi.IsDir() {
		t.Fatalf("dir %s not made: %v", tr2.Dir, err)
	}
	if rec, err := tr2.Settle(context.Background()); err != nil || rec.Kept {
		t.Fatalf("Settle = %+v, %v", rec, err)
	}
}

func TestAddFromLinkedWorktreeNamesTheMainRepository(t *testing.T) {
	b := setup(t, nil)
	first := b.add(t, "t1")
	tr, err := Add(context.Background(), first.Path, b.root, "t2")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Repo != b.repo {
		t.Fatalf("repo = %q, want the main one %q", tr.Repo, b.repo)
	}
}

func TestAddRefuses(t *testing.T) {
	t.Run("not a repository", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		_, err := Add(context.Background(), dir, filepath.Join(dir, "worktrees"), "t1")
		if !errors.Is(err, ErrNotRepo) {
			t.Fatalf("err = %v, want ErrNotRepo", err)
		}
		if exists(filepath.Join(dir, "worktrees")) {
			t.Fatal("Add made the root outside a repository")
		}
	})
	t.Run("inside the git dir", func(t *testing.T) {
		b := setup(t, nil)
		_, err := Add(context.Background(), filepath.Join(b.repo, ".git"), b.root, "t1")
		if !errors.Is(err, ErrNotRepo) {
			t.Fatalf("err = %v, want ErrNotRepo", err)
		}
	})
	t.Run("no commits", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		run(t, dir, "init", "-q")
		_, err := Add(context.Background(), dir, filepath.Join(dir, "..", "worktrees"), "t1")
		if !errors.Is(err, ErrNoCommits) {
			t.Fatalf("err = %v, want ErrNoCommits", err)
		}
	})
	t.Run("folder exists", func(t *testing.T) {
		b := setup(t, nil)
		write(t, filepath.Join(b.root, "t1", "keep.txt"), "mine", 0o644)
		_, err := Add(context.Background(), b.repo, b.root, "t1")
		if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "folder") {
			t.Fatalf("err = %v, want ErrExists for the folder", err)
		}
		if branchExists(t, b.repo, "conch/t1") {
			t.Fatal("branch made anyway")
		}
	})
	t.Run("branch exists", func(t *testing.T) {
		b := setup(t, nil)
		run(t, b.repo, "branch", "conch/t1")
		_, err := Add(context.Background(), b.repo, b.root, "t1")
		if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "branch conch/t1") {
			t.Fatalf("err = %v, want ErrExists for the branch", err)
		}
		if exists(filepath.Join(b.root, "t1")) {
			t.Fatal("folder made anyway")
		}
	})
	t.Run("bad id", func(t *testing.T) {
		b := setup(t, nil)
		for _, id := range []string{"", "..", "a/b", "a..b", "x.lock", "sp ace"} {
			if _, err := Add(context.Background(), b.repo, b.root, id); err == nil {
				t.Errorf("Add accepted id %q", id)
			}
		}
	})
	t.Run("missing dir", func(t *testing.T) {
		t.Parallel()
		_, err := Add(context.Background(), filepath.Join(t.TempDir(), "nope"), t.TempDir(), "t1")
		if err == nil || errors.Is(err, ErrNotRepo) {
			t.Fatalf("err = %v, want a plain error", err)
		}
	})
}

func TestAddOnDetachedHead(t *testing.T) {
	b := setup(t, nil)
	run(t, b.repo, "commit", "-q", "--allow-empty", "-m", "second")
	first := run(t, b.repo, "rev-parse", "HEAD~1")
	run(t, b.repo, "checkout", "-q", "--detach", first)
	tr := b.add(t, "t1")
	if tr.Base != first {
		t.Fatalf("base = %q, want the detached HEAD %q", tr.Base, first)
	}
	if rec, err := tr.Settle(context.Background()); err != nil || rec.Kept {
		t.Fatalf("Settle = %+v, %v", rec, err)
	}
}

func TestSetup(t *testing.T) {
	t.Run("runs in the new worktree", func(t *testing.T) {
		b := setup(t, map[string]string{".conch/worktree-setup": "#!/bin/sh\n" +
			"echo installing\n" +
			"echo \"$CONCH_REPO\" > from-setup.txt\n"})
		tr := b.add(t, "t1")
		var out bytes.Buffer
		if err := tr.Setup(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != "installing\n" {
			t.Fatalf("output = %q", out.String())
		}
		got, err := os.ReadFile(filepath.Join(tr.Path, "from-setup.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(got)) != b.repo {
			t.Fatalf("CONCH_REPO = %q, want %q", got, b.repo)
		}
	})
	t.Run("failure carries its output", func(t *testing.T) {
		b := setup(t, map[string]string{".conch/worktree-setup": "#!/bin/sh\n" +
			"for i in $(seq 1 40); do echo line $i; done\n" +
			"echo 'npm ERR! missing: left-pad' >&2\n" +
			"exit 3\n"})
		tr := b.add(t, "t1")
		err := tr.Setup(context.Background(), nil)
		if !errors.Is(err, ErrSetup) {
			t.Fatalf("err = %v, want ErrSetup", err)
		}
		msg := err.Error()
		for _, want := range []string{"exit status 3", "npm ERR! missing: left-pad", "line 40"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("error %q does not say %q", msg, want)
			}
		}
		if strings.Contains(msg, "line 5\n") {
			t.Fatalf("error carries more than the last lines: %q", msg)
		}
	})
	t.Run("stopped by its context", func(t *testing.T) {
		b := setup(t, map[string]string{".conch/worktree-setup": "#!/bin/sh\nsleep 30 &\nsleep 30\n"})
		tr := b.add(t, "t1")
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := tr.Setup(ctx, nil)
		if !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "stopped") {
			t.Fatalf("err = %v, want ErrSetup saying it was stopped", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("Setup took %s after its context ended", d)
		}
	})
	t.Run("absent or not executable", func(t *testing.T) {
		b := setup(t, nil)
		tr := b.add(t, "t1")
		if err := tr.Setup(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(tr.Path, ".conch", "worktree-setup"), "#!/bin/sh\nexit 1\n", 0o644)
		var out bytes.Buffer
		if err := tr.Setup(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "not executable") {
			t.Fatalf("output = %q", out.String())
		}
	})
}

func TestRemove(t *testing.T) {
	t.Run("refuses work unless forced", func(t *testing.T) {
		b := setup(t, nil)
		tr := b.add(t, "t1")
		write(t, filepath.Join(tr.Path, "a.txt"), "changed\n", 0o644)
		if err := tr.Remove(context.Background(), false); !errors.Is(err, ErrHasWork) {
			t.Fatalf("err = %v, want ErrHasWork", err)
		}
		if !exists(filepath.Join(tr.Path, "a.txt")) || !branchExists(t, b.repo, tr.Branch) {
			t.Fatal("refused, yet something was removed")
		}
		if err := tr.Remove(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		if exists(tr.Path) || branchExists(t, b.repo, tr.Branch) || listed(t, b.repo, tr.Path) {
			t.Fatal("forced remove left something behind")
		}
	})
	t.Run("deleted by hand", func(t *testing.T) {
		b := setup(t, nil)
		tr := b.add(t, "t1")
		if err := os.RemoveAll(tr.Path); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Inspect(context.Background()); !errors.Is(err, ErrMissing) {
			t.Fatalf("Inspect err = %v, want ErrMissing", err)
		}
		err := tr.Remove(context.Background(), false)
		if !errors.Is(err, ErrMissing) || errors.Is(err, ErrHasWork) {
			t.Fatalf("err = %v, want ErrMissing", err)
		}
		if branchExists(t, b.repo, tr.Branch) || listed(t, b.repo, tr.Path) {
			t.Fatal("branch or git's record of the worktree left behind")
		}
		// A second go finds nothing to do and says the same.
		if err := tr.Remove(context.Background(), false); !errors.Is(err, ErrMissing) {
			t.Fatalf("second Remove = %v", err)
		}
	})
	t.Run("deleted by hand, branch holds commits", func(t *testing.T) {
		b := setup(t, nil)
		tr := b.add(t, "t1")
		run(t, tr.Path, "commit", "-q", "--allow-empty", "-m", "work")
		if err := os.RemoveAll(tr.Path); err != nil {
			t.Fatal(err)
		}
		rec, err := tr.Settle(context.Background())
		if !errors.Is(err, ErrMissing) || !errors.Is(err, ErrHasWork) {
			t.Fatalf("Settle err = %v, want ErrMissing and ErrHasWork", err)
		}
		if !rec.Kept || rec.Work.Ahead != 1 || !branchExists(t, b.repo, tr.Branch) {
			t.Fatalf("record = %+v; the branch's commit must be kept", rec)
		}
		if listed(t, b.repo, tr.Path) {
			t.Fatal("the missing worktree was not pruned")
		}
		if err := tr.Remove(context.Background(), true); !errors.Is(err, ErrMissing) || errors.Is(err, ErrHasWork) {
			t.Fatalf("forced Remove = %v, want ErrMissing alone", err)
		}
		if branchExists(t, b.repo, tr.Branch) {
			t.Fatal("forced Remove kept the branch")
		}
	})
	t.Run("settle after deleted by hand", func(t *testing.T) {
		b := setup(t, nil)
		tr := b.add(t, "t1")
		if err := os.RemoveAll(tr.Path); err != nil {
			t.Fatal(err)
		}
		rec, err := tr.Settle(context.Background())
		if !errors.Is(err, ErrMissing) || rec.Kept {
			t.Fatalf("Settle = %+v, %v; want not kept and ErrMissing", rec, err)
		}
		if branchExists(t, b.repo, tr.Branch) {
			t.Fatal("branch left behind")
		}
	})
	t.Run("locked", func(t *testing.T) {
		b := setup(t, nil)
		tr := b.add(t, "t1")
		run(t, b.repo, "worktree", "lock", "--reason", "on a USB stick", tr.Path)
		err := tr.Remove(context.Background(), true)
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "on a USB stick") {
			t.Fatalf("err = %v, want ErrLocked with the reason", err)
		}
		if !exists(tr.Path) || !branchExists(t, b.repo, tr.Branch) {
			t.Fatal("a locked worktree was touched")
		}
		rec, err := tr.Settle(context.Background())
		if !errors.Is(err, ErrLocked) || !rec.Kept {
			t.Fatalf("Settle = %+v, %v; want kept and ErrLocked", rec, err)
		}
	})
	t.Run("after a restart, from the record", func(t *testing.T) {
		b := setup(t, nil)
		tr := b.add(t, "t1")
		run(t, tr.Path, "commit", "-q", "--allow-empty", "-m", "work")
		rec, err := tr.Settle(context.Background())
		if err != nil || !rec.Kept {
			t.Fatalf("Settle = %+v, %v", rec, err)
		}
		again := FromRecord(rec)
		if w, err := again.Inspect(context.Background()); err != nil || w.Ahead != 1 {
			t.Fatalf("Inspect = %+v, %v", w, err)
		}
		if err := again.Remove(context.Background(), false); !errors.Is(err, ErrHasWork) {
			t.Fatalf("err = %v, want ErrHasWork", err)
		}
		if err := again.Remove(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		if exists(tr.Path) || branchExists(t, b.repo, tr.Branch) {
			t.Fatal("left behind")
		}
	})
	t.Run("not a branch conch made", func(t *testing.T) {
		t.Parallel()
		tr := Tree{Path: t.TempDir(), Branch: "main", Repo: t.TempDir()}
		if err := tr.Remove(context.Background(), true); err == nil || !strings.Contains(err.Error(), "not one Conch made") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestInspectMergeInProgress(t *testing.T) {
	b := setup(t, nil)
	run(t, b.repo, "checkout", "-q", "-b", "other")
	write(t, filepath.Join(b.repo, "a.txt"), "theirs\n", 0o644)
	run(t, b.repo, "commit", "-q", "-am", "theirs")
	run(t, b.repo, "checkout", "-q", "main")

	tr := b.add(t, "t1")
	write(t, filepath.Join(tr.Path, "a.txt"), "ours\n", 0o644)
	run(t, tr.Path, "commit", "-q", "-am", "ours")
	if out, err := tryGit(tr.Path, "merge", "other"); err == nil {
		t.Fatalf("merge did not conflict:\n%s", out)
	}
	w, err := tr.Inspect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.Operation != "merge" || w.Changed != 1 || w.Ahead != 1 {
		t.Fatalf("work = %+v, want an unfinished merge, 1 changed, ahead 1", w)
	}
	// The main repository is not in the middle of anything.
	if w, err := (Tree{Path: b.repo, Branch: "conch/x"}).Inspect(context.Background()); err != nil || w.Operation != "" {
		t.Fatalf("main repository work = %+v, %v", w, err)
	}
	rec, err := tr.Settle(context.Background())
	if err != nil || !rec.Kept || rec.Work.Operation != "merge" {
		t.Fatalf("Settle = %+v, %v", rec, err)
	}
}

func TestOperationMarkers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		files []string
		want  string
	}{
		{nil, ""},
		{[]string{"rebase-merge/done"}, "rebase"},
		{[]string{"rebase-apply/next"}, "rebase"},
		{[]string{"rebase-apply/applying"}, "am"},
		{[]string{"MERGE_HEAD"}, "merge"},
		{[]string{"CHERRY_PICK_HEAD"}, "cherry-pick"},
		{[]string{"REVERT_HEAD"}, "revert"},
		{[]string{"sequencer/todo=pick abc one"}, "cherry-pick"},
		{[]string{"sequencer/todo=revert abc one"}, "revert"},
		{[]string{"BISECT_LOG"}, "bisect"},
		{[]string{"rebase-merge/done", "CHERRY_PICK_HEAD"}, "rebase"},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		for _, f := range tc.files {
			name, text, _ := strings.Cut(f, "=")
			write(t, filepath.Join(dir, filepath.FromSlash(name)), text, 0o644)
		}
		if got := operation(dir); got != tc.want {
			t.Errorf("operation(%v) = %q, want %q", tc.files, got, tc.want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	out := "# branch.oid abc\x00# branch.head conch/t1\x00" +
		"1 .M N... 100644 100644 100644 1111 1111 a.txt\x00" +
		"2 R. N... 100644 100644 100644 2222 2222 R100 new.txt\x00old.txt\x00" +
		"1 D. N... 100644 000000 000000 3333 0000 gone.txt\x00" +
		"u UU N... 100644 100644 100644 100644 4444 5555 6666 both.txt\x00" +
		"? u1\x00? dir/u2\x00! ignored\x00"
	want := status{head: "abc", branch: "conch/t1", changed: 4, untracked: 2}
	if got := parseStatus(out); got != want {
		t.Fatalf("parseStatus = %+v, want %+v", got, want)
	}
	if got := parseStatus("# branch.oid abc\x00# branch.head (detached)\x00"); got != (status{head: "abc"}) {
		t.Fatalf("detached: %+v", got)
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{max: 10}
	b.Write([]byte("0123456789"))
	b.Write([]byte("ab\ncd\n"))
	if got := b.lastLines(1); got != "cd" {
		t.Fatalf("lastLines(1) = %q", got)
	}
	if got := b.lastLines(5); got != "6789ab\ncd" {
		t.Fatalf("lastLines(5) = %q", got)
	}
}

func TestHelpersSideBySide(t *testing.T) {
	b := setup(t, nil)
	const n = 4
	trees := make([]Tree, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			var err error
			trees[i], err = Add(context.Background(), b.repo, b.root, fmt.Sprintf("h%d", i))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(trees[0].Path, "a.txt"), "helper 0 was here\n", 0o644)
	kept := make([]bool, n)
	for i := range n {
		go func() {
			rec, err := trees[i].Settle(context.Background())
			kept[i] = rec.Kept
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if !kept[0] || kept[1] || kept[2] || kept[3] {
		t.Fatalf("kept = %v, want only the first", kept)
	}
	if got := run(t, b.repo, "branch", "--list", "conch/*"); got != "+ conch/h0" && got != "conch/h0" {
		t.Fatalf("branches left: %q", got)
	}
}

func TestAddInBareRepositoryWorktree(t *testing.T) {
	b := setup(t, nil)
	bare := filepath.Join(filepath.Dir(b.repo), "bare.git")
	run(t, b.repo, "clone", "-q", "--bare", b.repo, bare)
	linked := filepath.Join(filepath.Dir(b.repo), "linked")
	run(t, bare, "worktree", "add", "-q", linked)
	tr, err := Add(context.Background(), linked, b.root, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Repo != realPath(bare) {
		t.Fatalf("repo = %q, want the bare repository %q", tr.Repo, realPath(bare))
	}
	if rec, err := tr.Settle(context.Background()); err != nil || rec.Kept {
		t.Fatalf("Settle = %+v, %v", rec, err)
	}
	if branchExists(t, bare, tr.Branch) || exists(tr.Path) {
		t.Fatal("left behind")
	}
}
