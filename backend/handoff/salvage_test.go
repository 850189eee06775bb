package handoff_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/handoff"
	"conch/backend/task"
	"conch/backend/worktree"
)

// A helper in a worktree that fails with uncommitted work has it saved to
// its salvage ref; its worktree, branch and files are left as they were,
// and the card's record lists the file.
func TestAFailedHelpersWorkIsSalvaged(t *testing.T) {
	repo := gitRepo(t)
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			return handsOff(handoff.DelegateTool, map[string]any{"parts": []map[string]any{
				{"title": "Draft", "instructions": "draft the notes", "worktree": true},
			}})(context.Background(), a)
		}
		if len(a.Results()) == 0 {
			return callTool("write_file", map[string]string{"path": "draft.md", "content": "half a draft\n"})
		}
		return answer{Status: 500, Body: `{"error":{"message":"the model fell over","type":"server_error"}}`}
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	ch := e.chat(t, "main", task.Auto, repo)
	if _, err := e.chats.Send(ch.ID, "draft it in a worktree"); err != nil {
		t.Fatal(err)
	}
	tk := e.onlyTask(t, ch.ID)
	w := tk.Worktree
	if tk.Status != task.Failed || w == nil || !w.Kept || w.Salvage == nil {
		t.Fatalf("helper: %s %q worktree %+v", tk.Status, tk.Error, w)
	}
	if w.Salvage.Ref != worktree.SalvagePrefix+tk.ID || len(w.Salvage.Files) != 1 || w.Salvage.Files[0] != "draft.md" {
		t.Fatalf("salvage %+v", w.Salvage)
	}
	if out, err := exec.Command("git", "-C", repo, "show", w.Salvage.Ref+":draft.md").CombinedOutput(); err != nil || string(out) != "half a draft\n" {
		t.Fatalf("the ref holds %q (%v)", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(w.Path, "draft.md")); err != nil || string(b) != "half a draft\n" {
		t.Fatalf("the draft in the worktree: %q %v", b, err)
	}
	status, _ := exec.Command("git", "-C", w.Path, "status", "--porcelain").CombinedOutput()
	if strings.TrimSpace(string(status)) != "?? draft.md" {
		t.Errorf("the worktree's status changed: %q", status)
	}
	if !strings.Contains(strings.Join(tk.Steps, "|"), "Saved its unfinished work (1 file) to "+w.Salvage.Ref) {
		t.Errorf("steps %q", tk.Steps)
	}
}
