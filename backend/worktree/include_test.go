package worktree

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/task"
)

// includeRepo is a repository that ignores what a build needs and lists it
// in .conch/worktree-include, with those files in its main working tree,
// and a folder outside it that nothing may reach.
func includeRepo(t *testing.T) (bundle, string) {
	t.Helper()
	b := setup(t, map[string]string{
		".gitignore": "node_modules/\n.env\n*.local\nsecrets/\nlink-*\nnotes/\n",
		IncludeFile: "# what a build needs\n" +
			".env\n" +
			"config/*.local\n" +
			"node_modules/\n" +
			"./secrets\n" +
			"link-*\n" +
			"scratch.txt\n" +
			"a.txt\n" +
			"\n" +
			"missing.env\n" +
			"nothing/*.local\n" +
			"../outside/secret\n" +
			"/etc/hostname\n" +
			"**/.env\n",
	})
	outside := filepath.Join(t.TempDir(), "outside")
	write(t, filepath.Join(outside, "secret"), "outside\n", 0o600)
	write(t, filepath.Join(b.repo, ".env"), "TOKEN=1\n", 0o600)
	write(t, filepath.Join(b.repo, "config", "app.local"), "port=1\n", 0o640)
	write(t, filepath.Join(b.repo, "node_modules", "dep", "index.js"), "module.exports = 1\n", 0o644)
	write(t, filepath.Join(b.repo, "node_modules", ".bin", "dep"), "#!/bin/sh\n", 0o755)
	if err := os.Symlink("../dep/index.js", filepath.Join(b.repo, "node_modules", ".bin", "dep.js")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(b.repo, "secrets", "key"), "k\n", 0o600)
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(b.repo, "secrets", "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(b.repo, "link-env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(b.repo, "config", "app.local"), filepath.Join(b.repo, "link-abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(b.repo, "link-out")); err != nil {
		t.Fatal(err)
	}
	// Untracked, not ignored: in a worktree it would be the helper's work.
	write(t, filepath.Join(b.repo, "scratch.txt"), "mine\n", 0o644)
	return b, outside
}

func TestSetupCopiesWhatWorktreeIncludeLists(t *testing.T) {
	b, outside := includeRepo(t)
	rec := b.add(t, "t1")
	// As chattask has it: rebuilt from the task's record.
	tr := FromRecord(task.Worktree{Path: rec.Path, Branch: rec.Branch, Base: rec.Base})
	var out bytes.Buffer
	if err := tr.Setup(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	said := out.String()
	t.Log(said)

	for name, want := range map[string]struct {
		text string
		mode os.FileMode
	}{
		".env":                      {"TOKEN=1\n", 0o600},
		"config/app.local":          {"port=1\n", 0o640},
		"node_modules/dep/index.js": {"module.exports = 1\n", 0o644},
		"node_modules/.bin/dep":     {"#!/bin/sh\n", 0o755},
		"secrets/key":               {"k\n", 0o600},
	} {
		p := filepath.Join(tr.Path, filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want.text {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want.text)
			continue
		}
		if fi, _ := os.Lstat(p); fi.Mode().Perm() != want.mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want.mode)
		}
	}
	for name, want := range map[string]string{
		"node_modules/.bin/dep.js": "../dep/index.js",
		"link-env":                 ".env",
		"link-abs":                 filepath.Join("config", "app.local"), // into the worktree, not back into the main one
	} {
		if got, err := os.Readlink(filepath.Join(tr.Path, filepath.FromSlash(name))); err != nil || got != want {
			t.Errorf("link %s -> %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"secrets/leak", "link-out", "scratch.txt", "missing.env", "secret"} {
		if exists(filepath.Join(tr.Path, filepath.FromSlash(name))) {
			t.Errorf("%s was copied", name)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(tr.Path, "a.txt")); string(got) != "one\n" {
		t.Errorf("the tracked a.txt was overwritten: %q", got)
	}
	for _, want := range []string{
		"secrets/leak is a link leading out of the repository",
		"link-out is a link leading out of the repository",
		"1 file is not ignored by git, so not copied: in the worktree it would count as the helper's work (scratch.txt)",
		"missing.env is not in the main working tree, so it was skipped",
		"nothing in the main working tree matches nothing/*.local",
		"../outside/secret leads out of the repository",
		"/etc/hostname is not inside the repository",
		"**/.env: ** is not supported",
		"copied 8 files from " + b.repo,
	} {
		if !strings.Contains(said, IncludeFile+": "+want) {
			t.Errorf("the output does not say %q:\n%s", want, said)
		}
	}
	if strings.Contains(said, "a.txt") {
		t.Errorf("a tracked file is no news:\n%s", said)
	}

	// What was copied is ignored, so it is no work: the worktree goes.
	if w, err := tr.Inspect(context.Background()); err != nil || hasWork(w) {
		t.Fatalf("Inspect = %+v, %v; copied files are no work", w, err)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "secret")); string(got) != "outside\n" {
		t.Fatalf("the outside file changed: %q", got)
	}
	if settled, err := tr.Settle(context.Background()); err != nil || settled.Kept || exists(tr.Path) {
		t.Fatalf("Settle = %+v, %v", settled, err)
	}
}

func TestIncludeNeverOverwritesAndNeverLeavesTheWorktree(t *testing.T) {
	b := setup(t, map[string]string{
		".gitignore": "*.local\n",
		IncludeFile:  "cfg/x.local\nkeep.local\n",
	})
	outside := t.TempDir()
	// Committed, cfg is a link out of the repository; in the main working
	// tree it is a real folder holding the file.
	if err := os.Symlink(outside, filepath.Join(b.repo, "cfg")); err != nil {
		t.Fatal(err)
	}
	run(t, b.repo, "add", "cfg")
	run(t, b.repo, "commit", "-q", "-m", "link")
	if err := os.Remove(filepath.Join(b.repo, "cfg")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(b.repo, "cfg", "x.local"), "x\n", 0o644)
	write(t, filepath.Join(b.repo, "keep.local"), "from main\n", 0o644)

	tr := b.add(t, "t1")
	write(t, filepath.Join(tr.Path, "keep.local"), "the helper's\n", 0o644)
	var out bytes.Buffer
	if err := tr.Setup(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote through the worktree's link: %v", entries)
	}
	if !strings.Contains(out.String(), "cfg/x.local was not copied: cfg is a link in the worktree") {
		t.Fatalf("output = %q", out.String())
	}
	if got, _ := os.ReadFile(filepath.Join(tr.Path, "keep.local")); string(got) != "the helper's\n" {
		t.Fatalf("overwrote the worktree's own file: %q", got)
	}
}

// The list in the main working tree counts when the worktree has none
// (the person has not committed it yet).
func TestIncludeListFromTheMainWorkingTree(t *testing.T) {
	b := setup(t, map[string]string{".gitignore": ".env\n.conch/worktree-include\n"})
	write(t, filepath.Join(b.repo, filepath.FromSlash(IncludeFile)), ".env\n", 0o644)
	write(t, filepath.Join(b.repo, ".env"), "A=1\n", 0o644)
	tr := b.add(t, "t1")
	if err := tr.Setup(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(tr.Path, ".env")); string(got) != "A=1\n" {
		t.Fatalf(".env = %q", got)
	}
}

// Without a list, Setup copies nothing and says nothing.
func TestIncludeAbsent(t *testing.T) {
	b := setup(t, nil)
	tr := b.add(t, "t1")
	var out bytes.Buffer
	if err := tr.Setup(context.Background(), &out); err != nil || out.Len() != 0 {
		t.Fatalf("Setup = %v, said %q", err, out.String())
	}
}
