package handoff_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"conch/backend/event"
	"conch/backend/handoff"
	"conch/backend/task"
)

// Two helpers of one delegate change the same file in their worktrees, one
// committing it and one not: the merged result and both records say so,
// and a third that changed another file is not named.
func TestDelegateNamesFilesTwoHelpersChanged(t *testing.T) {
	repo := gitRepo(t)
	commitIt := "mkdir -p src && echo 'fixed' > src/app.ts && git add src && git -c user.name=t -c user.email=t@example.com commit -qm fix"
	leaveIt := "mkdir -p src && echo 'tested' > src/app.ts && echo 'test' > src/app.test.ts"
	other := "echo 'docs' > README.md"
	commands := map[string]string{"FIX": commitIt, "TEST": leaveIt, "DOCS": other}
	parts := map[string]any{"parts": []map[string]any{
		{"title": "Fix the bug", "instructions": "FIX it", "worktree": true},
		{"title": "Write the tests", "instructions": "TEST it", "worktree": true},
		{"title": "Update the docs", "instructions": "DOCS", "worktree": true},
	}}
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			if len(a.Results()) == 0 {
				return callTool("delegate", parts)
			}
			return say("Done.")
		}
		word, _, _ := strings.Cut(a.First(), " ")
		if len(a.Results()) == 0 {
			return callTool("run_command", map[string]string{"command": commands[word]})
		}
		return callTool("report_result", map[string]string{"summary": "Did " + word + "."})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	sub := e.bus.Subscribe(4096)
	defer sub.Close()
	c := e.chat(t, "main", task.Auto, repo)
	if _, err := e.chats.Send(c.ID, "fix it, test it and document it"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	results := e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(results) != 1 || results[0].IsError {
		t.Fatalf("delegate results: %+v", results)
	}
	merged := results[0].Output
	const said = "Both 'Fix the bug' and 'Write the tests' changed src/app.ts."
	if !strings.HasSuffix(merged, "\n\n"+said) {
		t.Errorf("the merged result does not end by naming the overlap:\n%s", merged)
	}
	if strings.Contains(merged, "README.md") {
		t.Errorf("the merged result names a file only one helper changed:\n%s", merged)
	}

	byTitle := map[string]task.Task{}
	for _, tk := range e.tasksOf(c.ID) {
		byTitle[tk.Title] = tk
	}
	fix, tests, docs := byTitle["Fix the bug"], byTitle["Write the tests"], byTitle["Update the docs"]
	for _, tk := range []task.Task{fix, tests, docs} {
		if tk.Status != task.Done || tk.Worktree == nil || !tk.Worktree.Kept {
			t.Fatalf("%s: %s, worktree %+v (error %q)", tk.Title, tk.Status, tk.Worktree, tk.Error)
		}
	}
	if got, want := fix.Worktree.Overlap, []task.Overlap{{File: "src/app.ts", With: []string{tests.ID}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("fix's overlap = %+v, want %+v", got, want)
	}
	if got, want := tests.Worktree.Overlap, []task.Overlap{{File: "src/app.ts", With: []string{fix.ID}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("tests' overlap = %+v, want %+v", got, want)
	}
	if docs.Worktree.Overlap != nil {
		t.Errorf("docs overlaps nobody, yet: %+v", docs.Worktree.Overlap)
	}
	// Announced, so the cards show it.
	announced := map[string]bool{}
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		if ev.Type == event.TaskChanged && ev.Task.Worktree != nil && len(ev.Task.Worktree.Overlap) > 0 {
			announced[ev.Task.ID] = true
		}
	}
	if !announced[fix.ID] || !announced[tests.ID] || announced[docs.ID] {
		t.Errorf("announced overlaps: %v", announced)
	}
	// Stored, not only kept in memory: the store has it after a restart.
	stored, err := e.st.Task(fix.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Worktree == nil || len(stored.Worktree.Overlap) != 1 || stored.Rev != fix.Rev {
		t.Errorf("stored: %+v (rev %d, live %d)", stored.Worktree, stored.Rev, fix.Rev)
	}
}
