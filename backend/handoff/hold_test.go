package handoff_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/errcode"
	"conch/backend/handoff"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/worktree"
)

// Stop in a helper's own chat stops the helper (stopped, not failed), and
// the parent's merged result says it was stopped.
func TestStopInATasksOwnChatStopsTheTask(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(ctx context.Context, a asked) answer {
		if a.Task() {
			<-ctx.Done() // thinks until stopped
			return say("never")
		}
		if len(a.Results()) == 0 {
			return callTool("delegate", map[string]any{"parts": []map[string]any{{"title": "Slow", "instructions": "think hard"}}})
		}
		return say("ok")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(c.ID, "go"); err != nil {
		t.Fatal(err)
	}
	var helper task.Task
	eventually(t, "the helper working", func() bool {
		ts := e.tasksOf(c.ID)
		if len(ts) == 1 && ts[0].Status == task.Running {
			own, _ := e.chats.Snapshot(ts[0].ConversationID)
			helper = ts[0]
			return own.Running
		}
		return false
	})
	if _, err := e.chats.StopTurn(helper.ConversationID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the helper to end", func() bool {
		x, _ := e.tasks.Get(helper.ID)
		helper = x
		return x.Status.Finished()
	})
	if helper.Status != task.Stopped || helper.Error != "" {
		t.Fatalf("helper after its chat's Stop: %s %q", helper.Status, helper.Error)
	}
	e.idle(t, c.ID)
	r := e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(r) != 1 || !strings.Contains(r[0].Output, "Stopped before it finished.") || strings.Contains(r[0].Output, "Didn't finish") {
		t.Fatalf("merged: %+v", r)
	}
}

// A chat task's commands, tool results and replies reach its own output
// log, and its record counts the bytes.
func TestAChatTaskWritesItsOutputLog(t *testing.T) {
	if err := os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		switch len(a.Results()) {
		case 0:
			return callTool("run_command", map[string]string{"command": "echo printed-by-the-task"})
		case 1:
			return callTool("read_file", map[string]string{"path": "notes.txt"})
		}
		return say("All read.")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	if err := os.WriteFile(filepath.Join(e.dir, "notes.txt"), []byte("the notes say hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := e.chat(t, "main", task.Auto, e.dir)
	tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "look", ConversationID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	final := waitFinal(t, e, c.ID, tk.ID)
	if final.Status != task.Done {
		t.Fatalf("final: %+v", final)
	}
	got, _ := e.tasks.Get(tk.ID)
	b, err := os.ReadFile(filepath.Join(e.home, "tasks", tk.ID, "output.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{"$ echo printed-by-the-task\nprinted-by-the-task\n", "› Read notes.txt\nthe notes say hi", "All read."} {
		if !strings.Contains(log, want) {
			t.Errorf("the task's log lacks %q:\n%s", want, log)
		}
	}
	if got.OutputBytes != int64(len(b)) {
		t.Fatalf("outputBytes %d, the log holds %d", got.OutputBytes, len(b))
	}
}

// A turn the person starts in a finished task's chat has no report_result:
// a report there would change nothing.
func TestAFinishedTasksChatOffersNoReport(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if len(a.Results()) == 0 && contains(a.Tools, "report_result") {
			return callTool("report_result", map[string]string{"summary": "First report."})
		}
		return say("Just talking.")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Auto, e.dir)
	tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "report", ConversationID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	waitFinal(t, e, c.ID, tk.ID)
	if _, err := e.chats.Send(tk.ConversationID, "one more thing"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, tk.ConversationID)
	asks := srv.requests()
	last := asks[len(asks)-1]
	if contains(last.Tools, "report_result") {
		t.Fatalf("the follow-up turn was offered report_result: %v", last.Tools)
	}
	if got, _ := e.tasks.Get(tk.ID); got.Summary != "First report." {
		t.Fatalf("the task's summary changed: %q", got.Summary)
	}
}

// A fallback that is not ready is named in the failure.
func TestALimitWithAFallbackThatIsNotReadySaysSo(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(context.Context, asked) answer { return answer{Status: 429, Body: quota} })
	down := startModel(t, nil, nil)
	down.Close()
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}, {id: "down", name: "Down", srv: down}}, func(e *env) {
		e.prefs.LimitFallback = "down"
	})
	c := e.chat(t, "main", task.Ask, e.dir)
	tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "anything", ConversationID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	final := waitFinal(t, e, c.ID, tk.ID)
	if final.Status != task.Failed || !strings.Contains(final.Error, "Main reached its usage limit") || !strings.Contains(final.Error, ", and the fallback, Down, is not ready: ") {
		t.Fatalf("final: %+v", final)
	}
}

// A part that falls back keeps its model choice: fast stays fast.
func TestAFallbackKeepsTheModelChoice(t *testing.T) {
	limited := startModel(t, []string{"big-model", "small-model"}, func(_ context.Context, a asked) answer {
		if a.Task() {
			return answer{Status: 429, Body: quota}
		}
		if len(a.Results()) == 0 {
			return callTool("delegate", map[string]any{"parts": []map[string]any{{"title": "Quick", "instructions": "quick", "model": "fast"}}})
		}
		return say("ok")
	})
	other := startModel(t, []string{"big-model", "tiny-model"}, func(_ context.Context, a asked) answer {
		return callTool("report_result", map[string]string{"summary": "done on " + a.Model})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: limited, fast: "small-model"}, {id: "other", name: "Other", srv: other, fast: "tiny-model"}}, func(e *env) {
		e.prefs.LimitFallback = "other"
	})
	c := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(c.ID, "go"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	ts := e.tasksOf(c.ID)
	if len(ts) != 1 || ts[0].Status != task.Done || ts[0].Provider != "other" || ts[0].Model != "tiny-model" || ts[0].Summary != "done on tiny-model" {
		t.Fatalf("helper: %+v", ts)
	}
}

// The task's question and its chat's question are one question with one id.
func TestATasksQuestionHasTheChatsID(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if len(a.Results()) == 0 {
			return callTool("write_file", map[string]string{"path": "out.txt", "content": "x"})
		}
		return callTool("report_result", map[string]string{"summary": "ok"})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Ask, e.dir)
	tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "write", ConversationID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the task to need you", func() bool {
		x, _ := e.tasks.Get(tk.ID)
		tk = x
		return x.Status == task.NeedsYou && x.Ask != nil
	})
	own, _ := e.chats.Snapshot(tk.ConversationID)
	if own.Ask == nil || own.Ask.ID != tk.Ask.ID {
		t.Fatalf("two ids for one question: task %q, chat %+v", tk.Ask.ID, own.Ask)
	}
	// Answered through the chat with that id, the task carries on.
	if _, err := e.chats.Answer(own.ID, tk.Ask.ID, true); err != nil {
		t.Fatal(err)
	}
	// A second answer is refused as a conflict, by the task or (once the
	// chat has heard the first back) by the chat.
	if _, err := e.chats.Answer(own.ID, tk.Ask.ID, true); errcode.Of(err) != errcode.Conflict {
		t.Fatalf("a second answer: %v", err)
	}
	waitFinal(t, e, c.ID, tk.ID)
}

// A task's chat never gets more power than the chat it came from.
func TestATasksChatCannotBeWidened(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(ctx context.Context, a asked) answer {
		if a.Task() {
			<-ctx.Done()
		}
		return say("ok")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	parent, err := e.chats.Create(chat.CreateRequest{Provider: "main", Mode: "edits", Cwd: e.dir})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "wait", ConversationID: parent.ID})
	if err != nil {
		t.Fatal(err)
	}
	auto, ask, edits := "auto", "ask", "edits"
	if _, err := e.chats.Patch(tk.ConversationID, chat.PatchRequest{Mode: &auto}); !errors.Is(err, chat.ErrConflict) || !strings.Contains(err.Error(), "cannot be in auto mode when the chat it came from is in edits mode") {
		t.Fatalf("widening the task's chat: %v", err)
	}
	if own, _ := e.chats.Snapshot(tk.ConversationID); own.Mode != task.Edits {
		t.Fatalf("the refused change took effect: %s", own.Mode)
	}
	// Narrower is fine, and back up to the parent's too.
	for _, m := range []*string{&ask, &edits} {
		if _, err := e.chats.Patch(tk.ConversationID, chat.PatchRequest{Mode: m}); err != nil {
			t.Fatal(err)
		}
	}
	// Narrowing the parent narrows the task's chat with it.
	if _, err := e.chats.Patch(parent.ID, chat.PatchRequest{Mode: &ask}); err != nil {
		t.Fatal(err)
	}
	if own, _ := e.chats.Snapshot(tk.ConversationID); own.Mode != task.Ask {
		t.Fatalf("the task's chat stayed in %s after its parent went to ask", own.Mode)
	}
	// A taint the parent still has cannot be cleared in the task's chat.
	if err := e.chats.Taint(parent.ID, "a test"); err != nil {
		t.Fatal(err)
	}
	if err := e.chats.Taint(tk.ConversationID, "a test"); err != nil {
		t.Fatal(err)
	}
	no := false
	if _, err := e.chats.Patch(tk.ConversationID, chat.PatchRequest{Tainted: &no}); !errors.Is(err, chat.ErrConflict) {
		t.Fatalf("clearing the task chat's taint while the parent's stands: %v", err)
	}
	if _, err := e.tasks.StopTask(tk.ID); err != nil {
		t.Fatal(err)
	}
}

// After a crash a helper's worktree is looked at again: its uncommitted
// work is counted and kept, and removing it needs the person's say.
func TestHealingInspectsAHelpersWorktree(t *testing.T) {
	repo := gitRepo(t)
	srv := startModel(t, []string{"big-model"}, func(context.Context, asked) answer { return say("ok") })
	now := time.Now().UTC()
	const id = "4b6f1a52-3c7e-4c39-9f57-7f0d3c1b9a14"
	var tree worktree.Tree
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}}, func(e *env) {
		var err error
		tree, err = worktree.Add(context.Background(), repo, filepath.Join(e.home, "worktrees"), id)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree.Path, "half-done.txt"), []byte("work\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		parent := conversation.Conversation{ID: "parent", Title: "Mine", Origin: conversation.Origin{Kind: conversation.FromChat},
			Provider: "main", Mode: task.Auto, Cwd: repo, CreatedAt: now, UpdatedAt: now, Rev: 1}
		own := conversation.Conversation{ID: "own", Title: "Helper", Origin: conversation.Origin{Kind: conversation.FromTask, TaskID: id, ParentID: "parent"},
			Provider: "main", Mode: task.Auto, Cwd: tree.Dir, Running: true, CreatedAt: now, UpdatedAt: now, Rev: 1}
		for _, c := range []conversation.Conversation{parent, own} {
			if err := e.st.PutConversation(c); err != nil {
				t.Fatal(err)
			}
		}
		started := now
		if err := e.st.PutTask(task.Task{ID: id, Kind: task.Helper, Status: task.Running, Title: "Helper", Text: "edit",
			ConversationID: "own", ParentConversationID: "parent", Provider: "main", Mode: task.Auto, Cwd: tree.Dir, Steps: []string{},
			Worktree: &task.Worktree{Path: tree.Path, Branch: tree.Branch, Base: tree.Base}, Wake: task.WakeNone,
			CreatedAt: now, StartedAt: &started, Rev: 5}); err != nil {
			t.Fatal(err)
		}
	})
	got, err := e.tasks.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != task.Interrupted || got.Worktree == nil || !got.Worktree.Kept || got.Worktree.Work.Untracked != 1 {
		t.Fatalf("healed helper: %s %+v", got.Status, got.Worktree)
	}
	// Its unfinished work was saved to its salvage ref as well.
	if s := got.Worktree.Salvage; s == nil || s.Ref != worktree.SalvagePrefix+id || len(s.Files) != 1 || s.Files[0] != "half-done.txt" {
		t.Fatalf("salvage: %+v", got.Worktree.Salvage)
	}
	if out, err := exec.Command("git", "-C", repo, "show", worktree.SalvagePrefix+id+":half-done.txt").CombinedOutput(); err != nil || string(out) != "work\n" {
		t.Fatalf("the salvage ref holds %q (%v)", out, err)
	}
	if _, err := e.svc.RemoveWorktree(id, false); !errors.Is(err, taskrun.ErrConflict) || !strings.Contains(err.Error(), "1 new file") ||
		!strings.Contains(err.Error(), "half-done.txt") {
		t.Fatalf("remove without confirm: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tree.Path, "half-done.txt")); err != nil {
		t.Fatalf("the work is gone: %v", err)
	}
	// Discarding, confirmed, takes the salvage ref with it.
	if _, err := e.svc.RemoveWorktree(id, true); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", worktree.SalvagePrefix+id).CombinedOutput(); err == nil {
		t.Fatalf("the salvage ref is still there: %s", out)
	}
}
