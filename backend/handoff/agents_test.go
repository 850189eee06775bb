//go:build unix

package handoff_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/chattask"
	"conch/backend/handoff"
	"conch/backend/provider"
	"conch/backend/provider/agentcli"
	"conch/backend/task"
	"conch/backend/testrig/agentrig"
	"conch/backend/testrig/modelserver"
)

// The real coding-agent CLIs take work handed off from a chat: a
// background task and a helper part each run on one and finish done, and
// one that hits a rate limit hands its task to the fallback.

// realAgent is a's provider, with its model answering by brain.
func realAgent(t *testing.T, a agentrig.Agent, brain modelserver.Brain) (provider.Provider, func() int) {
	rig, requests := a.Start(t, brain)
	return agentcli.New(a.Kind, agentcli.Config{ID: a.ID, Name: a.Name, Binary: rig.Bin, Env: rig.Env, Model: a.Model}), requests
}

func TestAgentsTakeAHelperPartAndABackgroundTask(t *testing.T) {
	for _, ag := range agentrig.Agents {
		t.Run(ag.ID, func(t *testing.T) {
			p, turns := realAgent(t, ag, agentrig.Writes(ag))
			dir := t.TempDir()
			for _, c := range []struct {
				name, tool string
				args       any
				file       string
				kind       task.Kind
			}{
				{"helper", handoff.DelegateTool, map[string]any{"parts": []map[string]any{
					{"title": "Tests", "instructions": "WRITE tests.txt with the tests", "provider": ag.Name},
				}}, "tests.txt", task.Helper},
				{"background", handoff.BackgroundTool, map[string]string{"text": "WRITE notes.txt please", "title": "Notes", "provider": ag.ID},
					"notes.txt", task.Background},
			} {
				t.Run(c.name, func(t *testing.T) {
					main := startModel(t, []string{"big-model"}, handsOff(c.tool, c.args))
					e := setup(t, []engineOpt{{id: "main", name: "Main", srv: main}, {id: ag.ID, p: p}})
					ch := e.chat(t, "main", task.Auto, dir)
					if _, err := e.chats.Send(ch.ID, "hand it to "+ag.Name); err != nil {
						t.Fatal(err)
					}
					tk := e.onlyTask(t, ch.ID)
					if tk.Status != task.Done || tk.Kind != c.kind || tk.Provider != ag.ID || tk.By != ag.Name {
						t.Fatalf("task: status %s (%s) kind %s provider %q by %q", tk.Status, tk.Error, tk.Kind, tk.Provider, tk.By)
					}
					if tk.Result == nil || tk.Result.Text != "Wrote "+c.file+"." {
						t.Errorf("result %+v", tk.Result)
					}
					if b, err := os.ReadFile(filepath.Join(dir, c.file)); err != nil || string(b) != "written by "+ag.ID+"\n" {
						t.Errorf("%s: %q %v", c.file, b, err)
						for _, m := range e.messages(t, tk.ConversationID) {
							t.Logf("%s: %s", m.Kind, m.Text)
						}
					}
				})
			}
			if n := turns(); n < 4 {
				t.Errorf("its model was asked %d times, want 2 per task", n)
			}
		})
	}
}

func TestAnAgentAtItsRateLimitHandsTheTaskToTheFallback(t *testing.T) {
	for _, ag := range agentrig.Agents {
		t.Run(ag.ID, func(t *testing.T) {
			p, _ := realAgent(t, ag, func(modelserver.Turn) modelserver.Reply { return ag.Limit })
			main := startModel(t, []string{"big-model"}, handsOff(handoff.BackgroundTool, map[string]string{"text": "count the files", "title": "Count", "provider": ag.ID}))
			spare := startModel(t, []string{"f-model"}, func(_ context.Context, a asked) answer { return helperBrain(a) })
			e := setup(t, []engineOpt{{id: "main", name: "Main", srv: main}, {id: ag.ID, p: p}, {id: "spare", name: "Spare", srv: spare}},
				func(e *env) { e.prefs.LimitFallback = "spare" })
			ch := e.chat(t, "main", task.Auto, t.TempDir())
			if _, err := e.chats.Send(ch.ID, "count them in the background on "+ag.Name); err != nil {
				t.Fatal(err)
			}
			tk := e.onlyTask(t, ch.ID)
			if tk.Status != task.Done || tk.Provider != "spare" || tk.Note != ag.Name+" reached its limit, so Spare carried on." {
				t.Fatalf("task: status %s (%s) provider %q note %q", tk.Status, tk.Error, tk.Provider, tk.Note)
			}
			if tk.Result == nil || tk.Result.Text != "Did: count the files" {
				t.Errorf("result %+v", tk.Result)
			}
		})
	}
}

// A chat on a coding agent hands work off too: Conch's tools reach the CLI
// over MCP. Its model starts a background task, which runs on the same
// CLI and reports its result with report_result, also over MCP.
func TestAnAgentChatStartsABackgroundTaskThatReports(t *testing.T) {
	for _, ag := range agentrig.Agents {
		t.Run(ag.ID, func(t *testing.T) {
			p, _ := realAgent(t, ag, func(turn modelserver.Turn) modelserver.Reply {
				step := len(turn.Results())
				var script []modelserver.Call
				text := "Started it."
				if strings.Contains(turn.FirstUser(), "REPORT") { // the task's own chat
					script = ag.Conch(chattask.ReportTool, map[string]string{"summary": "Reported by " + ag.ID + "."})
					text = "Reported."
				} else {
					script = ag.Conch(handoff.BackgroundTool, map[string]string{"text": "REPORT back", "title": "Report"})
				}
				if step < len(script) {
					return modelserver.Reply{Calls: script[step : step+1]}
				}
				return modelserver.Reply{Text: text}
			})
			e := setup(t, []engineOpt{{id: ag.ID, p: p}})
			ch := e.chat(t, ag.ID, task.Auto, t.TempDir())
			if _, err := e.chats.Send(ch.ID, "start it in the background"); err != nil {
				t.Fatal(err)
			}
			tk := e.onlyTask(t, ch.ID)
			if tk.Status != task.Done || tk.Kind != task.Background || tk.Provider != ag.ID {
				t.Fatalf("task: status %s (%s) kind %s provider %q", tk.Status, tk.Error, tk.Kind, tk.Provider)
			}
			if tk.Result == nil || tk.Result.Text != "Reported by "+ag.ID+"." {
				t.Errorf("result %+v", tk.Result)
			}
			if res := e.toolResults(t, ch.ID, handoff.BackgroundTool); len(res) != 1 || res[0].IsError {
				t.Errorf("the chat's call: %+v", res)
			}
		})
	}
}
