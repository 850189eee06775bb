package handoff_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/task"
)

// A helper's worktree gets the ignored .env that .conch/worktree-include
// lists, its output says what was copied and what was skipped, and since
// the copy is ignored the untouched worktree still goes.
func TestAHelpersWorktreeGetsWhatWorktreeIncludeLists(t *testing.T) {
	repo := gitRepo(t)
	files := map[string]string{".gitignore": ".env\n", ".conch/worktree-include": ".env\nmissing.env\n"}
	for name, text := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "include"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, ".env"), []byte("TOKEN=from-the-main-tree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			if len(a.Results()) == 0 {
				return callTool("delegate", map[string]any{"parts": []map[string]any{{"title": "Build", "instructions": "BUILD", "worktree": true}}})
			}
			return say("Built.")
		}
		if len(a.Results()) == 0 {
			return callTool("run_command", map[string]string{"command": "cat .env"})
		}
		return callTool("report_result", map[string]string{"summary": "Read: " + a.Results()[0]})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Auto, repo)
	if _, err := e.chats.Send(c.ID, "build it"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	ts := e.tasksOf(c.ID)
	if len(ts) != 1 || ts[0].Status != task.Done {
		t.Fatalf("helper: %+v", ts)
	}
	h := ts[0]
	if !strings.Contains(h.Summary, "TOKEN=from-the-main-tree") {
		t.Errorf("the helper did not find .env in its worktree: %q", h.Summary)
	}
	if h.Worktree == nil || h.Worktree.Kept {
		t.Errorf("a worktree holding only the copied .env was kept: %+v", h.Worktree)
	}
	log, err := os.ReadFile(filepath.Join(e.home, "tasks", h.ID, "output.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".conch/worktree-include: missing.env is not in the main working tree, so it was skipped", ".conch/worktree-include: copied 1 file from "} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the task's output does not say %q:\n%s", want, log)
		}
	}
}
