package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Salvage saves a helper's uncommitted work (a changed file, a new one;
// not an ignored one) as a commit on its own ref, and leaves the branch,
// the index and the working tree exactly as they were.
func TestSalvageKeepsUncommittedWorkWithoutTouchingAnything(t *testing.T) {
	b := setup(t, map[string]string{".gitignore": "*.log\n"})
	const id = "7e1c2b3a-4d5e-4f60-8a1b-2c3d4e5f6a70"
	tr := b.add(t, id)
	write(t, filepath.Join(tr.Path, "committed.txt"), "on the branch\n", 0o644)
	run(t, tr.Path, "add", "committed.txt")
	run(t, tr.Path, "commit", "-q", "-m", "Add committed.txt")
	write(t, filepath.Join(tr.Path, "README.md"), "changed by the helper\n", 0o644)
	write(t, filepath.Join(tr.Path, "src", "new.go"), "package src\n", 0o644)
	write(t, filepath.Join(tr.Path, "build.log"), "ignored\n", 0o644)
	run(t, tr.Path, "add", "src/new.go") // one staged, one not
	before := map[string]string{
		"status": run(t, tr.Path, "status", "--porcelain=v1", "--untracked-files=all"),
		"index":  run(t, tr.Path, "ls-files", "--stage"),
		"branch": run(t, tr.Path, "rev-parse", "HEAD"),
	}

	s, err := tr.Salvage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Ref != SalvagePrefix+id || s.Commit == "" {
		t.Fatalf("salvage %+v", s)
	}
	if !slices.Equal(s.Files, []string{"README.md", "src/new.go"}) || len(s.Commits) != 1 || !strings.HasSuffix(s.Commits[0], " Add committed.txt") {
		t.Errorf("files %q, commits %q", s.Files, s.Commits)
	}
	after := map[string]string{
		"status": run(t, tr.Path, "status", "--porcelain=v1", "--untracked-files=all"),
		"index":  run(t, tr.Path, "ls-files", "--stage"),
		"branch": run(t, tr.Path, "rev-parse", "HEAD"),
	}
	for k := range before {
		if before[k] != after[k] {
			t.Errorf("%s changed:\nbefore %q\nafter  %q", k, before[k], after[k])
		}
	}
	// The ref holds the work, on top of the branch.
	if got := run(t, b.repo, "show", s.Ref+":README.md"); got != "changed by the helper" {
		t.Errorf("README.md in the salvage: %q", got)
	}
	if got := run(t, b.repo, "show", s.Ref+":src/new.go"); got != "package src" {
		t.Errorf("src/new.go in the salvage: %q", got)
	}
	if _, err := tryGit(b.repo, "show", s.Ref+":build.log"); err == nil {
		t.Error("an ignored file was salvaged")
	}
	if parent := run(t, b.repo, "rev-parse", s.Ref+"^"); parent != before["branch"] {
		t.Errorf("salvage parent %s, branch %s", parent, before["branch"])
	}
	if err := DropSalvage(context.Background(), b.repo, id); err != nil {
		t.Fatal(err)
	}
	if _, err := tryGit(b.repo, "rev-parse", "--verify", "--quiet", s.Ref); err == nil {
		t.Error("the ref is still there after DropSalvage")
	}
	if err := DropSalvage(context.Background(), b.repo, id); err != nil {
		t.Errorf("dropping it twice: %v", err)
	}
}

// With nothing uncommitted there is no ref; the commits are still listed.
func TestSalvageOfCommittedWorkMakesNoRef(t *testing.T) {
	b := setup(t, nil)
	tr := b.add(t, "8e1c2b3a-4d5e-4f60-8a1b-2c3d4e5f6a71")
	s, err := tr.Salvage(context.Background())
	if err != nil || s.Ref != "" || len(s.Files) != 0 || len(s.Commits) != 0 {
		t.Fatalf("clean: %+v %v", s, err)
	}
	if err := os.RemoveAll(tr.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Salvage(context.Background()); err == nil {
		t.Error("salvaging a missing worktree did not fail")
	}
}
