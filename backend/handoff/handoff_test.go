package handoff_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"conch/backend/chat"
	"conch/backend/chattask"
	"conch/backend/conversation"
	"conch/backend/handoff"
	"conch/backend/pref"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// commit is a command that commits a new file in the folder it runs in.
const commit = "echo hi > new.txt && git add new.txt && git -c user.name=t -c user.email=t@example.com commit -qm 'add new.txt'"

// helperBrain scripts helpers by the first word of their instructions.
func helperBrain(a asked) answer {
	first, results := a.First(), a.Results()
	switch {
	case strings.HasPrefix(first, "EDIT"):
		if len(results) == 0 {
			return callTool("run_command", map[string]string{"command": commit})
		}
		return callTool("report_result", map[string]string{"summary": "Committed new.txt."})
	case strings.HasPrefix(first, "LOOK"):
		if len(results) == 0 {
			return callTool("list_files", map[string]string{"path": "."})
		}
		return say("Looked around; nothing needs changing.")
	case strings.HasPrefix(first, "FETCH"):
		if len(results) == 0 {
			url := strings.TrimSpace(strings.TrimPrefix(first, "FETCH"))
			return callTool("fetch_url", map[string]string{"url": url})
		}
		return callTool("report_result", map[string]string{"summary": "Read the page."})
	}
	if len(results) == 0 {
		return callTool("report_result", map[string]string{"summary": "Did: " + first})
	}
	return say("ok")
}

// parentBrain delegates args on the person's first message, then answers
// with what came back.
func parentBrain(args any) func(context.Context, asked) answer {
	return func(_ context.Context, a asked) answer {
		if a.Task() {
			return helperBrain(a)
		}
		if len(a.Results()) == 0 {
			return callTool("delegate", args)
		}
		return say("Here is what the helpers found.")
	}
}

const quota = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`

func TestDelegateWorktreesFallbackAndMergedResults(t *testing.T) {
	repo := gitRepo(t)
	parts := map[string]any{"parts": []map[string]any{
		{"title": "Edit", "instructions": "EDIT the code and commit", "worktree": true},
		{"title": "Look", "instructions": "LOOK at the code", "worktree": true},
		{"title": "Tests", "instructions": "write the missing tests", "provider": "Second"},
	}}
	main := startModel(t, []string{"big-model", "small-model"}, parentBrain(parts))
	second := startModel(t, []string{"s-model"}, func(context.Context, asked) answer {
		return answer{Status: 429, Body: quota}
	})
	spare := startModel(t, []string{"f-model"}, func(_ context.Context, a asked) answer { return helperBrain(a) })
	e := setup(t, []engineOpt{
		{id: "main", name: "Main", srv: main, fast: "small-model"},
		{id: "second", name: "Second", srv: second},
		{id: "spare", name: "Spare", srv: spare},
	}, func(e *env) { e.prefs.LimitFallback = "spare" })

	c := e.chat(t, "main", task.Auto, repo)
	if _, err := e.chats.Send(c.ID, "fix it, and have Second write the tests"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	results := e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(results) != 1 || results[0].IsError {
		t.Fatalf("delegate results: %+v", results)
	}
	merged := results[0].Output

	byTitle := map[string]task.Task{}
	for _, tk := range e.tasksOf(c.ID) {
		byTitle[tk.Title] = tk
	}
	if len(byTitle) != 3 {
		t.Fatalf("tasks: %+v", byTitle)
	}
	group := byTitle["Edit"].GroupID
	for title, tk := range byTitle {
		if tk.Status != task.Done || tk.Kind != task.Helper || tk.GroupID != group || group == "" || tk.Parts != 3 || tk.Mode != task.Auto {
			t.Errorf("%s: status %s kind %s group %q parts %d mode %s (error %q)", title, tk.Status, tk.Kind, tk.GroupID, tk.Parts, tk.Mode, tk.Error)
		}
	}

	edit := byTitle["Edit"]
	if w := edit.Worktree; w == nil || !w.Kept || w.Work.Ahead != 1 || w.Branch != "conch/"+edit.ID {
		t.Errorf("edit's worktree: %+v", edit.Worktree)
	}
	if edit.Model != "small-model" || edit.By != "" {
		t.Errorf("edit runs on the chat's provider's fast model: model %q by %q", edit.Model, edit.By)
	}
	if !strings.Contains(merged, "## Edit\n\nCommitted new.txt.") || !strings.Contains(merged, "`conch/"+edit.ID+"`") {
		t.Errorf("merged result lacks the edit's summary or branch:\n%s", merged)
	}

	look := byTitle["Look"]
	if w := look.Worktree; w == nil || w.Kept {
		t.Errorf("look's worktree should be gone: %+v", look.Worktree)
	} else if _, err := os.Stat(w.Path); !os.IsNotExist(err) {
		t.Errorf("look's worktree folder is still there: %v", err)
	}
	if b := branches(t, repo); strings.Contains(b, look.ID) || !strings.Contains(b, edit.ID) {
		t.Errorf("branches: %q (edit %s kept, look %s gone)", b, edit.ID, look.ID)
	}
	if !strings.Contains(merged, "## Look\n\nLooked around; nothing needs changing.") {
		t.Errorf("merged result lacks the look's reply:\n%s", merged)
	}

	tests := byTitle["Tests"]
	if tests.Provider != "spare" || tests.By != "Spare" || tests.Note != "Second reached its limit, so Spare carried on." {
		t.Errorf("tests: provider %q by %q note %q", tests.Provider, tests.By, tests.Note)
	}
	if !strings.Contains(merged, "## Tests\n\nDid: write the missing tests") || !strings.Contains(merged, tests.Note) {
		t.Errorf("merged result lacks the tests' part or its note:\n%s", merged)
	}
	if len(second.requests()) == 0 {
		t.Error("the pinned provider was never asked")
	}
	for _, a := range main.requests() {
		if !a.Task() && (!strings.Contains(a.System, "- second (Second): a hosted model") || !strings.Contains(a.System, "- spare (Spare)")) {
			t.Errorf("the assistant's prompt does not list the other providers:\n%s", a.System)
		}
		if a.Task() && a.Model != "small-model" {
			t.Errorf("a helper on the chat's provider used %q, not its fast model", a.Model)
		}
		if a.Task() && (contains(a.Tools, handoff.DelegateTool) || contains(a.Tools, handoff.BackgroundTool) || !contains(a.Tools, chattask.ReportTool)) {
			t.Errorf("a helper was offered %v", a.Tools)
		}
	}
	// A kept worktree goes only with the person's say.
	if _, err := e.svc.RemoveWorktree(edit.ID, false); !errors.Is(err, taskrun.ErrConflict) || !strings.Contains(err.Error(), "1 commit") {
		t.Fatalf("removing a worktree with work without confirm: %v", err)
	}
	if _, err := os.Stat(edit.Worktree.Path); err != nil {
		t.Fatalf("the refused removal touched the worktree: %v", err)
	}
	after, err := e.svc.RemoveWorktree(edit.ID, true)
	if err != nil || after.Worktree.Kept {
		t.Fatalf("confirmed removal: %+v %v", after.Worktree, err)
	}
	if _, err := os.Stat(edit.Worktree.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
	if b := branches(t, repo); strings.Contains(b, edit.ID) {
		t.Errorf("its branch is still there: %q", b)
	}
	if _, err := e.svc.RemoveWorktree(look.ID, true); !errors.Is(err, taskrun.ErrConflict) {
		t.Errorf("a task without a kept worktree: %v", err)
	}

	// The parent chat holds one card's worth of events per helper, and its
	// assistant answered after the tool.
	events := map[string]int{}
	for _, m := range e.messages(t, c.ID) {
		if m.Kind == conversation.TaskEvent {
			events[m.TaskEvent.TaskID]++
			if m.TaskEvent.Final {
				t.Errorf("a helper posted a final result into the chat: %+v", m.TaskEvent)
			}
		}
	}
	for title, tk := range byTitle {
		if events[tk.ID] < 3 { // queued, running, done
			t.Errorf("%s: %d task events in the parent chat", title, events[tk.ID])
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestSixPartsRunFourAtATimeAndSevenAreRefused(t *testing.T) {
	gate := make(chan struct{})
	var inside atomic.Int32
	six := map[string]any{"parts": []map[string]any{}}
	for i := range 6 {
		six["parts"] = append(six["parts"].([]map[string]any), map[string]any{"title": fmt.Sprintf("P%d", i+1), "instructions": fmt.Sprintf("part %d", i+1)})
	}
	srv := startModel(t, []string{"big-model"}, func(ctx context.Context, a asked) answer {
		if a.Task() {
			if len(a.Results()) == 0 {
				inside.Add(1)
				select {
				case <-gate:
				case <-ctx.Done():
				}
			}
			return helperBrain(a)
		}
		if strings.Contains(a.First(), "seven") && len(a.Results()) == 0 {
			seven := append([]map[string]any{}, six["parts"].([]map[string]any)...)
			seven = append(seven, map[string]any{"title": "P7", "instructions": "part 7"})
			return callTool("delegate", map[string]any{"parts": seven})
		}
		if len(a.Results()) == 0 {
			return callTool("delegate", six)
		}
		return say("done")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Auto, e.dir)

	if _, err := e.chats.Send(c.ID, "split in seven"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	r := e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "1 to 6 parts, got 7") {
		t.Fatalf("seven parts: %+v", r)
	}
	if n := len(e.tasksOf(c.ID)); n != 0 {
		t.Fatalf("seven parts started %d tasks", n)
	}

	c = e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(c.ID, "split in six"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "four helpers running and two queued", func() bool {
		var running, queued int
		for _, tk := range e.tasksOf(c.ID) {
			switch tk.Status {
			case task.Running:
				running++
			case task.Queued:
				queued++
			}
		}
		return running == 4 && queued == 2 && inside.Load() == 4
	})
	conc := e.tasks.Concurrent()
	if conc.Helper.Running != 4 || conc.Helper.Limit != 4 {
		t.Errorf("helper slots: %+v", conc.Helper)
	}
	close(gate)
	e.idle(t, c.ID)
	ts := e.tasksOf(c.ID)
	if len(ts) != 6 {
		t.Fatalf("%d tasks", len(ts))
	}
	for _, tk := range ts {
		if tk.Status != task.Done {
			t.Errorf("%s: %s %s", tk.Title, tk.Status, tk.Error)
		}
	}
	r = e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(r) != 1 || r[0].IsError || strings.Count(r[0].Output, "## P") != 6 {
		t.Fatalf("six parts merged: %+v", r)
	}
}

func TestStoppingTheParentTurnStopsEveryHelper(t *testing.T) {
	const marker = "31.4159"
	parts := map[string]any{"parts": []map[string]any{
		{"title": "A", "instructions": "SLEEP"}, {"title": "B", "instructions": "SLEEP"}, {"title": "C", "instructions": "SLEEP"},
	}}
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if a.Task() {
			if len(a.Results()) == 0 {
				return callTool("run_command", map[string]string{"command": "sleep " + marker})
			}
			return say("woke")
		}
		if len(a.Results()) == 0 {
			return callTool("delegate", parts)
		}
		return say("done")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(c.ID, "sleep in three parts"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "three helpers sleeping", func() bool { return sleepers(marker) == 3 })
	if _, err := e.chats.StopTurn(c.ID); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	eventually(t, "every helper stopped", func() bool {
		ts := e.tasksOf(c.ID)
		for _, tk := range ts {
			if tk.Status != task.Stopped {
				return false
			}
		}
		return len(ts) == 3
	})
	if n := sleepers(marker); n != 0 {
		t.Errorf("%d helper processes left running", n)
	}
}

// sleepers counts processes running `sleep <marker>`.
func sleepers(marker string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "sleep\x00"+marker) {
			n++
		}
	}
	return n
}

func TestUnknownProviderStartsNothingAndOverBudgetRefuses(t *testing.T) {
	var e *env
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if len(a.Results()) > 0 {
			return say("ok")
		}
		if strings.Contains(a.First(), "broke") {
			// The month's budget runs out while this reply is made.
			p := e.preferences()
			p.Budget.Monthly = 0.01
			e.prefsMu.Lock()
			e.prefs = p
			e.prefsMu.Unlock()
			if err := e.st.PutMonthSpend(time.Now().Format("2006-01"), 0.02); err != nil {
				t.Error(err)
			}
			return callTool("delegate", map[string]any{"parts": []map[string]any{{"title": "Mine", "instructions": "one"}}})
		}
		return callTool("delegate", map[string]any{"parts": []map[string]any{
			{"title": "Mine", "instructions": "one"},
			{"title": "Theirs", "instructions": "two", "provider": "Nobody"},
		}})
	})
	e = setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(c.ID, "go"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	r := e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, `"Nobody"`) || !strings.Contains(r[0].Output, "main (Main)") {
		t.Fatalf("unknown provider: %+v", r)
	}
	if n := len(e.tasksOf(c.ID)); n != 0 {
		t.Fatalf("an unknown provider started %d tasks", n)
	}

	c2 := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(c2.ID, "go broke"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c2.ID)
	r = e.toolResults(t, c2.ID, handoff.DelegateTool)
	if len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "Refused") || !strings.Contains(r[0].Output, "budget") {
		t.Fatalf("over budget: %+v", r)
	}
	if n := len(e.tasksOf(c2.ID)); n != 0 {
		t.Fatalf("over budget started %d tasks", n)
	}
}

func TestFanOutPastTheChatLimitIsRefused(t *testing.T) {
	parts := []map[string]any{}
	for i := range 5 {
		parts = append(parts, map[string]any{"title": fmt.Sprint(i), "instructions": strings.Repeat("context ", 4000)})
	}
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if len(a.Results()) == 0 {
			return callTool("delegate", map[string]any{"parts": parts})
		}
		return say("ok")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}}, func(e *env) {
		e.prefs.Prices = map[string]pref.Price{"big-model": {Input: 10, Output: 30}}
	})
	c, err := e.chats.Create(chat.CreateRequest{Provider: "main", Mode: "auto", Cwd: e.dir, Limit: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.chats.Send(c.ID, "go"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	r := e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "would cost about") {
		t.Fatalf("fan-out past the limit: %+v", r)
	}
	if n := len(e.tasksOf(c.ID)); n != 0 {
		t.Fatalf("%d tasks started", n)
	}
}

func TestHelperTaintFlowsBackToTheParent(t *testing.T) {
	page := startModel(t, nil, func(context.Context, asked) answer { return say("unused") })
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if a.Task() {
			return helperBrain(a)
		}
		if len(a.Results()) == 0 {
			return callTool("delegate", map[string]any{"parts": []map[string]any{
				{"title": "Read the page", "instructions": "FETCH " + page.URL + "/v1/models"},
			}})
		}
		return say("read it")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Auto, e.dir)
	if c.Tainted {
		t.Fatal("a new chat is tainted")
	}
	if _, err := e.chats.Send(c.ID, "read that page"); err != nil {
		t.Fatal(err)
	}
	c = e.idle(t, c.ID)
	ts := e.tasksOf(c.ID)
	if len(ts) != 1 || ts[0].Status != task.Done {
		t.Fatalf("tasks: %+v", ts)
	}
	helperChat, _ := e.chats.Snapshot(ts[0].ConversationID)
	if !helperChat.Tainted {
		t.Fatal("the helper that fetched a page is not tainted")
	}
	eventually(t, "the parent tainted", func() bool {
		c, _ = e.chats.Snapshot(c.ID)
		return c.Tainted
	})
}

func TestBackgroundTasksPostResultsAndWakeOnlyWhenTheAssistantAsked(t *testing.T) {
	var parentTurns atomic.Int32
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if a.Task() {
			if strings.Contains(a.First(), "README") {
				return say("Tidied the README.")
			}
			return helperBrain(a)
		}
		parentTurns.Add(1)
		last := a.Last()
		switch {
		case last.Role == "user" && strings.Contains(last.Text, "count the files in the background"):
			return callTool(handoff.BackgroundTool, map[string]string{"text": "count the files", "title": "Count files"})
		case last.Role == "user" && strings.Contains(last.Text, "finished. Its result"):
			return say("Your background task is done: it counted the files.")
		}
		return say("Started it; I'll tell you when it's done.")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Ask, e.dir)

	// The person sends work away: its summary comes back, nobody is woken.
	tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "tidy the README", ConversationID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Kind != task.Background || tk.Wake != task.WakeNone || tk.Mode != task.Ask || tk.Provider != "main" || tk.ConversationID == "" || tk.ConversationID == c.ID {
		t.Fatalf("task: %+v", tk)
	}
	own, _ := e.chats.Snapshot(tk.ConversationID)
	if own.Origin != (conversation.Origin{Kind: conversation.FromTask, TaskID: tk.ID, ParentID: c.ID}) {
		t.Fatalf("task chat origin: %+v", own.Origin)
	}
	list, err := e.chats.List("", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list.Conversations {
		if l.ID == own.ID {
			t.Fatal("a task's chat is in the chat list")
		}
	}
	final := waitFinal(t, e, c.ID, tk.ID)
	if final.Summary != "Tidied the README." || final.Status != task.Done || final.ConversationID != tk.ConversationID {
		t.Fatalf("final event: %+v", final)
	}
	done, _ := e.tasks.Get(tk.ID)
	if done.Result == nil || done.Result.Source != task.SourceTurn || done.Wake != task.WakeNone {
		t.Fatalf("task after: result %+v wake %s", done.Result, done.Wake)
	}
	if n := parentTurns.Load(); n != 0 {
		t.Fatalf("the person's task woke the assistant (%d turns)", n)
	}

	// The assistant sends work away: it is woken once with the result.
	if _, err := e.chats.Send(c.ID, "count the files in the background"); err != nil {
		t.Fatal(err)
	}
	var started task.Task
	eventually(t, "the assistant's task", func() bool {
		for _, x := range e.tasksOf(c.ID) {
			if x.Title == "Count files" {
				started = x
				return true
			}
		}
		return false
	})
	waitFinal(t, e, c.ID, started.ID)
	eventually(t, "the wake sent", func() bool {
		x, _ := e.tasks.Get(started.ID)
		return x.Wake == task.WakeSent
	})
	e.idle(t, c.ID)
	eventually(t, "the woken reply", func() bool {
		msgs := e.messages(t, c.ID)
		last := msgs[len(msgs)-1]
		return last.Kind == conversation.Assistant && strings.Contains(last.Text, "counted the files")
	})
	if n := parentTurns.Load(); n != 3 { // the call, its answer, the wake
		t.Fatalf("parent provider calls: %d, want 3", n)
	}
}

func waitFinal(t *testing.T, e *env, chatID, taskID string) conversation.TaskUpdate {
	t.Helper()
	var final conversation.TaskUpdate
	eventually(t, "the result back in the chat", func() bool {
		for _, m := range e.messages(t, chatID) {
			if m.Kind == conversation.TaskEvent && m.TaskEvent.TaskID == taskID && m.TaskEvent.Final {
				final = *m.TaskEvent
				return true
			}
		}
		return false
	})
	return final
}

func TestATaskAsksThroughItsTaskAndTheChat(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if len(a.Results()) == 0 {
			return callTool("write_file", map[string]string{"path": "out.txt", "content": "hello\n"})
		}
		return callTool("report_result", map[string]string{"summary": "Wrote out.txt: " + a.Results()[0]})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Ask, e.dir)
	for i, c2 := range []struct{ viaChat, allow bool }{{false, true}, {true, true}, {false, false}} {
		tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: fmt.Sprintf("write %d", i), ConversationID: c.ID})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the task to need you", func() bool {
			x, _ := e.tasks.Get(tk.ID)
			tk = x
			return x.Status == task.NeedsYou && x.Ask != nil
		})
		own, _ := e.chats.Snapshot(tk.ConversationID)
		if own.Ask == nil || own.Ask.Tool != "write_file" {
			t.Fatalf("the question is not in the task's chat: %+v", own.Ask)
		}
		if approvals := e.tasks.Approvals(); len(approvals) != 1 || approvals[0].TaskID != tk.ID {
			t.Fatalf("the approval inbox: %+v", approvals)
		}
		if c2.viaChat {
			if _, err := e.chats.Answer(own.ID, own.Ask.ID, c2.allow); err != nil {
				t.Fatal(err)
			}
		} else if _, err := e.tasks.Answer(tk.ID, tk.Ask.ID, c2.allow); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the task done", func() bool {
			x, _ := e.tasks.Get(tk.ID)
			tk = x
			return x.Status.Finished()
		})
		if tk.Status != task.Done || tk.Result.Source != task.SourceReport || !strings.Contains(tk.Summary, "Wrote out.txt") || tk.Ask != nil {
			t.Fatalf("task: %s %q %q", tk.Status, tk.Summary, tk.Error)
		}
		step, said := "You allowed it", "Wrote 6 bytes"
		if !c2.allow {
			step, said = "You declined it", "The person declined"
		}
		if !contains(tk.Steps, step) || !strings.Contains(tk.Summary, said) {
			t.Errorf("steps %v, summary %q", tk.Steps, tk.Summary)
		}
		own, _ = e.chats.Snapshot(tk.ConversationID)
		if own.Ask != nil || own.Running {
			t.Errorf("the task's chat still asks or runs: %+v", own)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "out.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("out.txt: %q %v", b, err)
	}
}

func TestAProviderThatIsNotReadyFailsTheTaskAtOnce(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(context.Context, asked) answer { return say("hi") })
	down := startModel(t, nil, nil)
	down.Close()
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}, {id: "down", name: "Down", srv: down}})
	c := e.chat(t, "down", task.Ask, e.dir)
	tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "anything", ConversationID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != task.Failed || !strings.Contains(tk.Error, "Down is not ready") {
		t.Fatalf("task: %s %q", tk.Status, tk.Error)
	}
	// A wider mode than the chat's is refused.
	c2 := e.chat(t, "main", task.Plan, e.dir)
	if _, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "x", ConversationID: c2.ID, Options: taskrun.Options{Mode: "auto"}}); err == nil {
		t.Fatal("a task wider than its chat was started")
	}
}

func TestHelpersSpendAsPartOfTheParentAndPauseAtItsLimit(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if a.Task() {
			if len(a.Results()) < 2 {
				ans := callTool("list_files", map[string]string{"path": "."})
				ans.OutputTokens = 1000
				return ans
			}
			return callTool("report_result", map[string]string{"summary": "Spent, then done."})
		}
		if len(a.Results()) == 0 {
			return callTool("delegate", map[string]any{"parts": []map[string]any{{"title": "Spender", "instructions": "spend"}}})
		}
		return say("ok")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}}, func(e *env) {
		e.prefs.Prices = map[string]pref.Price{"big-model": {Input: 0, Output: 1000}}
	})
	c, err := e.chats.Create(chat.CreateRequest{Provider: "main", Mode: "auto", Cwd: e.dir, Limit: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.chats.Send(c.ID, "go"); err != nil {
		t.Fatal(err)
	}
	// At the parent's limit the helper pauses; it does not fail.
	var helper task.Task
	eventually(t, "the helper to pause", func() bool {
		ts := e.tasksOf(c.ID)
		if len(ts) == 1 {
			helper = ts[0]
		}
		return len(ts) == 1 && helper.Paused != nil
	})
	if helper.Status != task.Running || helper.Paused.Kind != "usage" || !strings.Contains(helper.Current, "Paused: the chat this came from has spent $2.02 of its $1.50 limit") {
		t.Fatalf("paused helper: %s %+v %q", helper.Status, helper.Paused, helper.Current)
	}
	own, _ := e.chats.Snapshot(helper.ConversationID)
	parent, _ := e.chats.Snapshot(c.ID)
	if own.Spent != 2 || parent.Spent < 2.02 {
		t.Fatalf("spent: helper %v, parent %v", own.Spent, parent.Spent)
	}
	// Raised, it carries on by itself.
	limit := 10.0
	if _, err := e.chats.Patch(c.ID, chat.PatchRequest{Limit: &limit}); err != nil {
		t.Fatal(err)
	}
	helper = e.waitDone(t, helper.ID)
	if helper.Status != task.Done || helper.Paused != nil || helper.Result == nil || helper.Result.Text != "Spent, then done." {
		t.Fatalf("after the raise: %s %q %+v", helper.Status, helper.Error, helper.Result)
	}
	e.idle(t, c.ID)
	r := e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(r) != 1 || !strings.Contains(r[0].Output, "Spent, then done.") {
		t.Fatalf("merged: %+v", r)
	}
}

func TestATaskInterruptedByACrashIsToldToItsChat(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(context.Context, asked) answer { return say("Nothing to add.") })
	now := time.Now().UTC()
	parent := conversation.Conversation{ID: "parent", Title: "Mine", Origin: conversation.Origin{Kind: conversation.FromChat},
		Provider: "main", Mode: task.Ask, CreatedAt: now, UpdatedAt: now, Rev: 1}
	own := conversation.Conversation{ID: "own", Title: "Sent away", Origin: conversation.Origin{Kind: conversation.FromTask, TaskID: "t1", ParentID: "parent"},
		Provider: "main", Mode: task.Ask, Running: true, CreatedAt: now, UpdatedAt: now, Rev: 1}
	started := now
	left := task.Task{ID: "t1", Kind: task.Background, Status: task.Running, Title: "Sent away", Text: "do it",
		ConversationID: "own", ParentConversationID: "parent", Provider: "main", Mode: task.Ask, Steps: []string{},
		Wake: task.WakePending, CreatedAt: now, StartedAt: &started, Rev: 3}
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}}, func(e *env) {
		parent.Cwd, own.Cwd, left.Cwd = e.dir, e.dir, e.dir
		for _, c := range []conversation.Conversation{parent, own} {
			if err := e.st.PutConversation(c); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.st.PutTask(left); err != nil {
			t.Fatal(err)
		}
	})
	final := waitFinal(t, e, "parent", "t1")
	if final.Status != task.Interrupted || final.Error != taskrun.InterruptedReason {
		t.Fatalf("final event: %+v", final)
	}
	// The assistant had asked for it, so it is woken once with the news.
	eventually(t, "the wake", func() bool {
		x, _ := e.tasks.Get("t1")
		return x.Wake == task.WakeSent
	})
	e.idle(t, "parent")
	eventually(t, "the woken reply", func() bool {
		msgs := e.messages(t, "parent")
		return msgs[len(msgs)-1].Kind == conversation.Assistant
	})
	asks := srv.requests()
	if len(asks) != 1 || !strings.Contains(asks[0].Last().Text, `"Sent away" ended interrupted`) {
		t.Fatalf("the parent was asked %d times; last: %+v", len(asks), asks)
	}
}

func TestALimitWithoutFallbackFailsSayingWhy(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(context.Context, asked) answer { return answer{Status: 429, Body: quota} })
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Ask, e.dir)
	tk, err := e.h.Background(context.Background(), taskrun.CreateRequest{Text: "anything", ConversationID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	final := waitFinal(t, e, c.ID, tk.ID)
	if final.Status != task.Failed || !strings.Contains(final.Error, "Main reached its usage limit") || !strings.Contains(final.Error, "quota") {
		t.Fatalf("final: %+v", final)
	}
	if got, _ := e.tasks.Get(tk.ID); got.Note != "" || got.Provider != "main" {
		t.Fatalf("no fallback, yet: note %q provider %q", got.Note, got.Provider)
	}
}

func TestAFailingWorktreeSetupFailsTheHelperWithItsOutput(t *testing.T) {
	repo := gitRepo(t)
	setupScript := filepath.Join(repo, ".conch", "worktree-setup")
	if err := os.MkdirAll(filepath.Dir(setupScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(setupScript, []byte("#!/bin/sh\necho installing deps\necho 'npm ERR! no network' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", ".conch"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "setup"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	srv := startModel(t, []string{"big-model"}, parentBrain(map[string]any{"parts": []map[string]any{
		{"title": "Build", "instructions": "LOOK", "worktree": true},
	}}))
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	c := e.chat(t, "main", task.Auto, repo)
	if _, err := e.chats.Send(c.ID, "build it"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	ts := e.tasksOf(c.ID)
	if len(ts) != 1 || ts[0].Status != task.Failed || !strings.Contains(ts[0].Error, "npm ERR! no network") {
		t.Fatalf("helper: %+v", ts)
	}
	for _, a := range srv.requests() {
		if a.Task() {
			t.Fatal("the helper ran although its setup failed")
		}
	}
	r := e.toolResults(t, c.ID, handoff.DelegateTool)
	if len(r) != 1 || !strings.Contains(r[0].Output, "Didn't finish: The worktree's setup failed") {
		t.Fatalf("merged: %+v", r)
	}
}
