package handoff_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"conch/backend/handoff"
	"conch/backend/task"
)

// A chat task with a check: the check runs after it reports, in its
// folder; a failure gives the model the end of the check's output and one
// more turn; a pass is done, verified; failing again fails the task with
// the check's output.
func TestAChatTasksCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		// fixes is how many turns it takes the model to make ok.txt
		// right (0: right away; 9: never).
		fixes  int
		status task.Status
		turns  int32 // the task's reports: the first, plus one per retry
	}{
		{"passes at once", 0, task.Done, 1},
		{"fixed in the extra turn", 1, task.Done, 2},
		{"fails twice", 9, task.Failed, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var reports atomic.Int32
			srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
				if !a.Task() {
					return handsOff(handoff.BackgroundTool, map[string]string{"text": "make ok.txt say yes", "title": "OK", "check": "grep -q yes ok.txt || { echo 'ok.txt does not say yes'; exit 1; }"})(context.Background(), a)
				}
				// Each round (the first turn, then one per failed check) it
				// writes ok.txt once, then reports.
				seen := a.transcript()
				round := strings.Count(seen, "[The check ") + 1
				mark := fmt.Sprintf("round %d", round)
				if !strings.Contains(seen, mark) {
					reports.Add(1)
					text := "no"
					if round > c.fixes {
						text = "yes"
					}
					return callTool("write_file", map[string]string{"path": "ok.txt", "content": text + "\n" + mark + "\n"})
				}
				if strings.Contains(a.Last().Text, "Reported.") {
					return say("reported")
				}
				return callTool("report_result", map[string]string{"summary": "Wrote ok.txt."})
			})
			e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
			ch := e.chat(t, "main", task.Auto, e.dir)
			if _, err := e.chats.Send(ch.ID, "make it ok in the background"); err != nil {
				t.Fatal(err)
			}
			tk := e.onlyTask(t, ch.ID)
			if tk.Status != c.status || tk.Check == "" || tk.CheckRetries != 1 {
				t.Fatalf("status %s (%q), check %q retries %d", tk.Status, tk.Error, tk.Check, tk.CheckRetries)
			}
			if got := reports.Load(); got != c.turns {
				t.Errorf("%d writes, want %d", got, c.turns)
			}
			if c.status == task.Done && (tk.Result == nil || tk.Result.Source != task.SourceCheck) {
				t.Errorf("result %+v", tk.Result)
			}
			if c.status == task.Failed && !strings.Contains(tk.Error, "ok.txt does not say yes") {
				t.Errorf("error %q", tk.Error)
			}
			if c.turns > 1 {
				told := false
				for _, a := range srv.requests() {
					told = told || strings.Contains(a.transcript(), "ok.txt does not say yes")
				}
				if !told {
					t.Error("the model was never told the check's output")
				}
			}
			b, _ := os.ReadFile(filepath.Join(e.dir, "ok.txt"))
			if c.status == task.Done && !strings.HasPrefix(string(b), "yes") {
				t.Errorf("ok.txt %q", b)
			}
		})
	}
}

// A failing check's output reaches the model once: told after the first
// failure; the second, with the same output, says so without repeating
// it; and resumed after it failed, the task's model reads the output once
// in all it is sent, the notice to carry on not repeating it.
func TestACheckFailuresOutputReachesTheModelOnce(t *testing.T) {
	const said = "CHECK-TAIL-42: the widget is broken"
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			return handsOff(handoff.BackgroundTool, map[string]string{"text": "fix the widget", "title": "Widget", "check": "cat why.txt; exit 1"})(context.Background(), a)
		}
		return callTool("report_result", map[string]string{"summary": "Fixed."})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	if err := os.WriteFile(filepath.Join(e.dir, "why.txt"), []byte(said+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(ch.ID, "fix it in the background"); err != nil {
		t.Fatal(err)
	}
	tk := e.onlyTask(t, ch.ID)
	if tk.Status != task.Failed || tk.CheckRetries != 1 || !strings.Contains(tk.Error, said) {
		t.Fatalf("first run: %s %q retries %d", tk.Status, tk.Error, tk.CheckRetries)
	}
	before := len(srv.requests())
	if _, err := e.svc.ResumeTask(tk.ID); err != nil {
		t.Fatal(err)
	}
	e.waitDone(t, tk.ID)
	var asks []asked
	for i, a := range srv.requests() {
		if a.Task() {
			asks = append(asks, a)
			if i >= before {
				break // the resumed task's first request
			}
		}
	}
	if len(asks) != 3 {
		t.Fatalf("%d requests of the task's chat, want 3 (first, after the first failure, resumed)", len(asks))
	}
	for i, a := range asks[1:] {
		if n := strings.Count(a.transcript(), said); n != 1 {
			t.Errorf("request %d carries the check's output %d times, want 1:\n%s", i+2, n, a.transcript())
		}
	}
	if seen := asks[2].transcript(); !strings.Contains(seen, "again, with the same output") || !strings.Contains(seen, carriesOn) {
		t.Errorf("the resumed request does not say the check failed again and to carry on:\n%s", seen)
	}
}
