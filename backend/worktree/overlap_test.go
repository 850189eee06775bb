package worktree

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"conch/backend/task"
)

func TestFilesListsCommittedAndUncommittedWork(t *testing.T) {
	b := setup(t, nil)
	ctx := context.Background()
	tr := b.add(t, "t1")
	write(t, filepath.Join(tr.Path, "a.txt"), "committed\n", 0o644)
	run(t, tr.Path, "mv", "sub/inner/b.txt", "moved.txt")
	run(t, tr.Path, "commit", "-q", "-am", "edit and move")
	write(t, filepath.Join(tr.Path, "c.txt"), "not yet\n", 0o644)
	write(t, filepath.Join(tr.Path, "new dir", "n.txt"), "new\n", 0o644)
	write(t, filepath.Join(tr.Path, "node_modules", "x.js"), "ignored\n", 0o644)
	files, err := tr.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.txt", "c.txt", "moved.txt", "new dir/n.txt", "sub/inner/b.txt"}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("files = %q, want %q", files, want)
	}

	// Deleted by hand, the branch's commits still count.
	if err := os.RemoveAll(tr.Path); err != nil {
		t.Fatal(err)
	}
	gone := tr
	files, err = gone.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.txt", "moved.txt", "sub/inner/b.txt"}; !reflect.DeepEqual(files, want) {
		t.Fatalf("files of a deleted worktree = %q, want %q", files, want)
	}

	untouched := b.add(t, "t2")
	if files, err := untouched.Files(ctx); err != nil || len(files) != 0 {
		t.Fatalf("untouched: %q, %v", files, err)
	}
}

func TestOverlapsNameWhoChangedTheSameFile(t *testing.T) {
	b := setup(t, nil)
	ctx := context.Background()
	helper := func(id, title string, do func(tr Tree)) task.Task {
		tr := b.add(t, id)
		do(tr)
		rec, err := tr.Settle(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return task.Task{ID: id, Title: title, Worktree: &rec}
	}
	fix := helper("fix", "Fix the bug", func(tr Tree) {
		write(t, filepath.Join(tr.Path, "a.txt"), "fixed\n", 0o644)
		run(t, tr.Path, "commit", "-q", "-am", "fix")
		write(t, filepath.Join(tr.Path, "c.txt"), "also\n", 0o644)
	})
	tests := helper("tests", "Write the tests", func(tr Tree) {
		write(t, filepath.Join(tr.Path, "a.txt"), "tested\n", 0o644) // not committed
		write(t, filepath.Join(tr.Path, "a_test.txt"), "test\n", 0o644)
	})
	docs := helper("docs", "Document it", func(tr Tree) {
		write(t, filepath.Join(tr.Path, "c.txt"), "documented\n", 0o644)
		run(t, tr.Path, "commit", "-q", "-am", "docs")
		write(t, filepath.Join(tr.Path, "a.txt"), "docs too\n", 0o644)
	})
	look := helper("look", "Look around", func(Tree) {}) // nothing kept
	deps := helper("deps", "Install", func(tr Tree) {
		write(t, filepath.Join(tr.Path, "node_modules", "a.txt"), "ignored\n", 0o644)
		write(t, filepath.Join(tr.Path, "deps.txt"), "mine alone\n", 0o644)
	})
	group := []task.Task{fix, tests, docs, look, deps}
	got := Overlaps(ctx, group)
	want := map[string][]task.Overlap{
		"fix":   {{File: "a.txt", With: []string{"tests", "docs"}}, {File: "c.txt", With: []string{"docs"}}},
		"tests": {{File: "a.txt", With: []string{"fix", "docs"}}},
		"docs":  {{File: "a.txt", With: []string{"fix", "tests"}}, {File: "c.txt", With: []string{"fix"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("overlaps = %+v\nwant %+v", got, want)
	}

	for i := range group {
		group[i].Worktree.Overlap = got[group[i].ID]
	}
	const said = "'Fix the bug', 'Write the tests' and 'Document it' all changed a.txt. Both 'Fix the bug' and 'Document it' changed c.txt."
	if s := SayOverlaps(group); s != said {
		t.Fatalf("said %q\nwant %q", s, said)
	}
	if s := SayOverlaps(group[3:]); s != "" {
		t.Fatalf("no overlap, yet said %q", s)
	}
}

func TestSentence(t *testing.T) {
	for _, tc := range []struct {
		names, files []string
		want         string
	}{
		{[]string{"'A'", "'B'"}, []string{"src/app.ts"}, "Both 'A' and 'B' changed src/app.ts."},
		{[]string{"'A'", "'B'"}, []string{"x", "y"}, "Both 'A' and 'B' changed x and y."},
		{[]string{"'A'", "'B'", "'C'"}, []string{"x", "y", "z"}, "'A', 'B' and 'C' all changed x, y and z."},
		{[]string{"'A'", "'B'"}, []string{"1", "2", "3", "4", "5"}, "Both 'A' and 'B' changed 1, 2, 3, 4 and 5."},
		{[]string{"'A'", "'B'"}, []string{"1", "2", "3", "4", "5", "6"}, "Both 'A' and 'B' changed 1, 2, 3, 4 and 2 more files."},
	} {
		if got := sentence(tc.names, tc.files); got != tc.want {
			t.Errorf("sentence(%q, %q) = %q, want %q", tc.names, tc.files, got, tc.want)
		}
	}
}
