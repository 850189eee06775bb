package handoff_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"conch/backend/pref"
	"conch/backend/task"
)

// delegate's helpers spend together under the job's cap: at it they pause
// (not fail); Carry on (Resume) raises the cap once more and they finish.
// The card knows the estimate and the cap before the helpers start.
func TestAJobAtItsCapPausesUntilCarryOn(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if a.Task() {
			if len(a.Results()) < 2 {
				ans := callTool("list_files", map[string]string{"path": "."})
				ans.OutputTokens = 1000
				return ans
			}
			return callTool("report_result", map[string]string{"summary": "Done after the cap."})
		}
		if len(a.Results()) == 0 {
			return callTool("delegate", map[string]any{"cap": 1.5, "parts": []map[string]any{{"title": "Costly", "instructions": "spend"}}})
		}
		return say("ok")
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}}, func(e *env) {
		e.prefs.Prices = map[string]pref.Price{"big-model": {Input: 0, Output: 1000}}
	})
	c := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(c.ID, "go"); err != nil {
		t.Fatal(err)
	}
	var helper task.Task
	eventually(t, "the helper to pause at the cap", func() bool {
		ts := e.tasksOf(c.ID)
		if len(ts) == 1 {
			helper = ts[0]
		}
		return len(ts) == 1 && helper.Paused != nil
	})
	if helper.Cap != 1.5 || helper.Estimate <= 0 || !strings.Contains(helper.Current, "this job's helpers have spent $2.00 of its $1.50 cap") {
		t.Fatalf("paused helper: cap %v estimate %v current %q", helper.Cap, helper.Estimate, helper.Current)
	}
	if _, err := e.svc.ResumeTask(helper.ID); err != nil {
		t.Fatal(err)
	}
	helper = e.waitDone(t, helper.ID)
	if helper.Status != task.Done || helper.Result == nil || helper.Result.Text != "Done after the cap." {
		t.Fatalf("after Carry on: %s %q %+v", helper.Status, helper.Error, helper.Result)
	}
	if own, _ := e.chats.Snapshot(helper.ConversationID); own.JobCap != 3 {
		t.Errorf("the job's cap after Carry on: %v", own.JobCap)
	}
	if !strings.Contains(strings.Join(helper.Steps, "|"), "You raised its job's cap to $3.00") {
		t.Errorf("steps %q", helper.Steps)
	}
}

// A provider's usage limit that says when it lifts, with no fallback,
// pauses the task until then; then it carries on by itself.
func TestAProvidersLimitWithAResetTimePausesUntilThen(t *testing.T) {
	var limited atomic.Bool
	limited.Store(true)
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			return handsOff("start_background_task", map[string]string{"text": "count the files", "title": "Count"})(context.Background(), a)
		}
		if limited.CompareAndSwap(true, false) {
			return answer{Status: 429, Body: quota, Headers: map[string]string{"Retry-After": "2"}}
		}
		return callTool("report_result", map[string]string{"summary": "Counted after the limit."})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	ch := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(ch.ID, "count them in the background"); err != nil {
		t.Fatal(err)
	}
	var tk task.Task
	eventually(t, "the task to pause", func() bool {
		ts := e.tasksOf(ch.ID)
		if len(ts) == 1 {
			tk = ts[0]
		}
		return len(ts) == 1 && (tk.Paused != nil || tk.Status.Finished())
	})
	if tk.Paused == nil || tk.Paused.Until.IsZero() || !strings.Contains(tk.Current, "usage limit lifts at") {
		t.Fatalf("paused: %s %q %+v %q", tk.Status, tk.Error, tk.Paused, tk.Current)
	}
	tk = e.waitDone(t, tk.ID)
	if tk.Status != task.Done || tk.Paused != nil || tk.Result.Text != "Counted after the limit." {
		t.Fatalf("after the limit lifted: %s %q %+v", tk.Status, tk.Error, tk.Result)
	}
}

// At the month's budget a task pauses (until the month turns, the card
// says); raising the budget in the preferences lets it carry on.
func TestATaskAtTheMonthsBudgetPausesUntilItIsRaised(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			return handsOff("start_background_task", map[string]string{"text": "spend, then report", "title": "Spend"})(context.Background(), a)
		}
		if len(a.Results()) == 0 {
			ans := callTool("list_files", map[string]string{"path": "."})
			ans.OutputTokens = 1000
			return ans
		}
		return callTool("report_result", map[string]string{"summary": "Done within the new budget."})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}}, func(e *env) {
		e.prefs.Prices = map[string]pref.Price{"big-model": {Input: 0, Output: 1000}}
		e.prefs.Budget.Monthly = 1
	})
	ch := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(ch.ID, "spend in the background"); err != nil {
		t.Fatal(err)
	}
	var tk task.Task
	eventually(t, "the task to pause at the month's budget", func() bool {
		ts := e.tasksOf(ch.ID)
		if len(ts) == 1 {
			tk = ts[0]
		}
		return len(ts) == 1 && (tk.Paused != nil || tk.Status.Finished())
	})
	if tk.Paused == nil || tk.Paused.Until.IsZero() || tk.Paused.Until.Day() != 1 || !strings.Contains(tk.Current, "This month's budget of $1.00 is spent") {
		t.Fatalf("paused: %s %q %+v %q", tk.Status, tk.Error, tk.Paused, tk.Current)
	}
	e.prefsMu.Lock()
	e.prefs.Budget.Monthly = 100
	e.prefsMu.Unlock()
	tk = e.waitDone(t, tk.ID)
	if tk.Status != task.Done || tk.Result == nil || tk.Result.Text != "Done within the new budget." {
		t.Fatalf("after the raise: %s %q %+v", tk.Status, tk.Error, tk.Result)
	}
}
