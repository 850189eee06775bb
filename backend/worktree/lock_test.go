package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// another is a second repository for a test that already called setup.
func another(t *testing.T) bundle {
	t.Helper()
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	if err := os.CopyFS(repo, os.DirFS(template)); err != nil {
		t.Fatal(err)
	}
	return bundle{repo: realPath(repo), root: filepath.Join(tmp, "home", "worktrees")}
}

// at runs each of n calls of f in its own goroutine, released together,
// and returns their errors in order.
func at(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return errs
}

// Six helpers of one delegate (and two more) add their worktrees in one
// repository at the same moment, while helpers already working commit in
// theirs and another repository adds its own: every add succeeds, each on
// its own branch, and settling them all at once leaves only the work. Run
// it with -count to stress it.
func TestHelpersAddAtOnceInOneRepository(t *testing.T) {
	b := setup(t, nil)
	other := another(t)
	ctx := context.Background()
	// Two helpers already at work, committing while the others start.
	busy := []Tree{b.add(t, "busy0"), b.add(t, "busy1")}
	// One part made from a linked worktree of the same repository: it
	// shares the repository's lock.
	linked := b.add(t, "linked")

	const n = 8
	trees := make([]Tree, n)
	otherTrees := make([]Tree, n)
	stop := make(chan struct{})
	var commits sync.WaitGroup
	for i, tr := range busy {
		commits.Add(1)
		go func() {
			defer commits.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				write(t, filepath.Join(tr.Path, fmt.Sprintf("w%d.txt", i)), fmt.Sprint(k), 0o644)
				if out, err := tryGit(tr.Path, "add", "."); err != nil {
					t.Errorf("busy helper add: %v\n%s", err, out)
					return
				}
				if out, err := tryGit(tr.Path, "commit", "-q", "-m", "work"); err != nil {
					t.Errorf("busy helper commit: %v\n%s", err, out)
					return
				}
			}
		}()
	}
	errs := at(3*n, func(i int) error {
		var err error
		switch {
		case i < n:
			dir := b.repo
			if i%3 == 2 {
				dir = linked.Path
			}
			trees[i], err = Add(ctx, dir, b.root, fmt.Sprintf("h%d", i))
		case i < 2*n:
			otherTrees[i-n], err = Add(ctx, other.repo, other.root, fmt.Sprintf("o%d", i-n))
		default:
			// Git reads every worktree's entry while it lists them.
			_, err = list(ctx, b.repo)
		}
		return err
	})
	close(stop)
	commits.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	for i, tr := range trees {
		if got := run(t, tr.Path, "branch", "--show-current"); got != fmt.Sprintf("conch/h%d", i) {
			t.Fatalf("worktree %d is on %q", i, got)
		}
		if tr.Repo != b.repo || !listed(t, b.repo, tr.Path) {
			t.Fatalf("worktree %d: %+v not listed in %s", i, tr, b.repo)
		}
	}

	// Half of them edit; then all of them, and the other repository's,
	// settle at once.
	for i := 0; i < n; i += 2 {
		write(t, filepath.Join(trees[i].Path, "a.txt"), "helper was here\n", 0o644)
	}
	all := append(append(append([]Tree{}, trees...), otherTrees...), busy...)
	kept := make([]bool, len(all))
	errs = at(len(all), func(i int) error {
		rec, err := all[i].Settle(ctx)
		kept[i] = rec.Kept
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("settle %d (%s): %v", i, all[i].Path, err)
		}
	}
	for i := range all {
		want := i < n && i%2 == 0 || i >= 2*n // edited, or the busy ones
		if kept[i] != want || exists(all[i].Path) != want {
			t.Errorf("%s: kept %v, there %v; want %v", all[i].Path, kept[i], exists(all[i].Path), want)
		}
	}
	if got := run(t, other.repo, "branch", "--list", "conch/*"); got != "" {
		t.Errorf("the other repository keeps branches %q", got)
	}
}

// Another process's lock, or its worktree entry half made, is waited out:
// the person's commit holding .git/index.lock does not matter to a
// worktree at all, an entry whose commondir is still empty makes git fail
// until it is written, and packed-refs.lock holds up deleting a branch.
func TestAddAndSettleWaitOutAnotherProcess(t *testing.T) {
	b := setup(t, nil)
	ctx := context.Background()
	gitDir := filepath.Join(b.repo, ".git")
	write(t, filepath.Join(gitDir, "index.lock"), "", 0o644)
	defer os.Remove(filepath.Join(gitDir, "index.lock"))
	first := b.add(t, "first")

	// Another git, mid-way through `git worktree add`.
	half := filepath.Join(gitDir, "worktrees", "half")
	write(t, filepath.Join(half, "gitdir"), filepath.Join(b.root, "half", ".git")+"\n", 0o644)
	write(t, filepath.Join(half, "commondir"), "", 0o644)
	if _, err := tryGit(b.repo, "worktree", "list"); err == nil {
		t.Fatal("git does not trip over a half-made worktree entry; this test proves nothing")
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = os.RemoveAll(half)
	}()
	const n = 6
	trees := make([]Tree, n)
	errs := at(n+1, func(i int) error {
		if i == n {
			// Settling takes the same lock, and waits the same way.
			rec, err := first.Settle(ctx)
			if err == nil && rec.Kept {
				err = fmt.Errorf("kept an untouched worktree: %+v", rec)
			}
			return err
		}
		var err error
		trees[i], err = Add(ctx, b.repo, b.root, fmt.Sprintf("h%d", i))
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}

	lock := filepath.Join(gitDir, "packed-refs.lock")
	write(t, lock, "", 0o644)
	go func() {
		time.Sleep(1500 * time.Millisecond) // past git's own second of waiting
		_ = os.Remove(lock)
	}()
	if rec, err := trees[0].Settle(ctx); err != nil || rec.Kept {
		t.Fatalf("settle while packed-refs.lock was held: %+v, %v", rec, err)
	}
	if branchExists(t, b.repo, trees[0].Branch) {
		t.Fatal("branch left behind")
	}
}

// A lock that stays is not waited on for ever: the add fails with git's
// words, and leaves no branch behind.
func TestAddGivesUpOnALockThatStays(t *testing.T) {
	b := setup(t, nil)
	half := filepath.Join(b.repo, ".git", "worktrees", "half")
	write(t, filepath.Join(half, "gitdir"), filepath.Join(b.root, "half", ".git")+"\n", 0o644)
	write(t, filepath.Join(half, "commondir"), "", 0o644)
	start := time.Now()
	_, err := Add(context.Background(), b.repo, b.root, "t1")
	if err == nil || !strings.Contains(err.Error(), "commondir") {
		t.Fatalf("err = %v, want git's complaint", err)
	}
	if d := time.Since(start); d > lockWait+2*time.Second {
		t.Fatalf("gave up after %s", d)
	}
	if branchExists(t, b.repo, "conch/t1") || exists(filepath.Join(b.root, "t1")) {
		t.Fatal("a failed add left its branch or folder")
	}
}

// The lock is the repository's: the main worktree, a subfolder and a
// linked worktree share it; another repository has its own.
func TestOneLockPerRepository(t *testing.T) {
	b := setup(t, nil)
	other := another(t)
	ctx := context.Background()
	linked := b.add(t, "t1")
	key := func(dir string) string { return realPath(commonDir(ctx, dir)) }
	main := key(b.repo)
	if main != filepath.Join(b.repo, ".git") {
		t.Fatalf("key = %q", main)
	}
	for _, dir := range []string{filepath.Join(b.repo, "sub", "inner"), linked.Path, filepath.Join(linked.Path, "sub")} {
		if k := key(dir); k != main {
			t.Errorf("%s: key %q, want %q", dir, k, main)
		}
	}
	if key(other.repo) == main {
		t.Error("two repositories share a lock")
	}

	// Held for one repository, the other goes ahead.
	unlock := lockRepo(main)
	done := make(chan error, 1)
	go func() {
		_, err := Add(ctx, other.repo, other.root, "t2")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("another repository's add waited for this one's lock")
	}
	go func() {
		_, err := Add(ctx, b.repo, b.root, "t3")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("an add went ahead while its repository was locked: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
