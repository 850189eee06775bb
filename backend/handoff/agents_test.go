//go:build unix

package handoff_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/handoff"
	"conch/backend/internal/agentrig"
	"conch/backend/internal/modelserver"
	"conch/backend/internal/modelserver/anthropic"
	"conch/backend/internal/modelserver/gemini"
	"conch/backend/internal/modelserver/responses"
	"conch/backend/provider"
	"conch/backend/provider/agentcli"
	"conch/backend/task"
)

// The real coding-agent CLIs take work handed off from a chat: a
// background task and a helper part each run on one and finish done, and
// one that hits a rate limit hands its task to the fallback.

// agent is one real CLI, set up against its scripted model server.
type agent struct {
	id, name string
	// start makes the provider with its model answering by brain.
	start func(t *testing.T, brain modelserver.Brain) (p provider.Provider, turns func() int)
	// write is the model's call that writes name with text.
	write func(name, text string) modelserver.Call
	// limit is the model's answer at its rate limit.
	limit modelserver.Reply
}

var agents = []agent{
	{
		id: "codex", name: "Codex",
		start: func(t *testing.T, brain modelserver.Brain) (provider.Provider, func() int) {
			rig, srv := agentrig.Codex(t, brain, "")
			return agentcli.NewCodex(agentcli.Config{ID: "codex", Name: "Codex", Binary: rig.Bin, Env: rig.Env}), func() int { return len(srv.Turns()) }
		},
		write: func(name, text string) modelserver.Call {
			return responses.Patch("call_w", "*** Begin Patch\n*** Add File: "+name+"\n+"+text+"\n*** End Patch\n")
		},
		limit: responses.RateLimit("gpt-5.5", 1),
	},
	{
		id: "claude", name: "Claude Code",
		start: func(t *testing.T, brain modelserver.Brain) (provider.Provider, func() int) {
			rig, srv := agentrig.Claude(t, brain, 0)
			return agentcli.NewClaude(agentcli.Config{ID: "claude", Name: "Claude Code", Binary: rig.Bin, Env: rig.Env}), func() int { return len(srv.Turns()) }
		},
		write: func(name, text string) modelserver.Call {
			b, _ := json.Marshal(map[string]string{"file_path": name, "content": text + "\n"})
			return modelserver.Call{ID: "toolu_w", Name: "Write", Args: b}
		},
		limit: anthropic.RateLimit("1"),
	},
	{
		id: "gemini", name: "Gemini CLI",
		start: func(t *testing.T, brain modelserver.Brain) (provider.Provider, func() int) {
			rig, srv := agentrig.Gemini(t, brain, 1)
			return agentcli.NewGemini(agentcli.Config{ID: "gemini", Name: "Gemini CLI", Binary: rig.Bin, Env: rig.Env, Model: "gemini-2.5-flash"}),
				func() int { return len(srv.Turns()) }
		},
		write: func(name, text string) modelserver.Call {
			b, _ := json.Marshal(map[string]string{"file_path": name, "content": text + "\n"})
			return modelserver.Call{ID: "c1", Name: "write_file", Args: b}
		},
		limit: gemini.PerMinuteLimit("gemini-2.5-flash", "1s"),
	},
}

// writes is a CLI's scripted model: it writes the file the task's text
// names ("WRITE name.txt"), then says so.
func (a agent) writes() modelserver.Brain {
	return func(turn modelserver.Turn) modelserver.Reply {
		name := "out.txt"
		if _, rest, ok := strings.Cut(turn.FirstUser(), "WRITE "); ok {
			name = strings.Fields(rest)[0]
		}
		if len(turn.Results()) == 0 {
			return modelserver.Reply{Calls: []modelserver.Call{a.write(name, "written by "+a.id)}}
		}
		return modelserver.Reply{Text: "Wrote " + name + "."}
	}
}

// handsOff is the parent chat's model: it calls tool with args once, then
// answers.
func handsOff(tool string, args any) func(context.Context, asked) answer {
	return func(_ context.Context, a asked) answer {
		if len(a.Results()) == 0 {
			return callTool(tool, args)
		}
		return say("Handed off.")
	}
}

// onlyTask waits for the one task of chat parent to finish.
func (e *env) onlyTask(t *testing.T, parent string) task.Task {
	t.Helper()
	var tk task.Task
	eventually(t, "the task to finish", func() bool {
		tasks := e.tasksOf(parent)
		if len(tasks) == 1 {
			tk = tasks[0]
		}
		return len(tasks) == 1 && tk.Status.Finished()
	})
	return tk
}

func TestAgentsTakeAHelperPartAndABackgroundTask(t *testing.T) {
	for _, ag := range agents {
		t.Run(ag.id, func(t *testing.T) {
			p, turns := ag.start(t, ag.writes())
			dir := t.TempDir()
			for _, c := range []struct {
				name, tool string
				args       any
				file       string
				kind       task.Kind
			}{
				{"helper", handoff.DelegateTool, map[string]any{"parts": []map[string]any{
					{"title": "Tests", "instructions": "WRITE tests.txt with the tests", "provider": ag.name},
				}}, "tests.txt", task.Helper},
				{"background", handoff.BackgroundTool, map[string]string{"text": "WRITE notes.txt please", "title": "Notes", "provider": ag.id},
					"notes.txt", task.Background},
			} {
				t.Run(c.name, func(t *testing.T) {
					main := startModel(t, []string{"big-model"}, handsOff(c.tool, c.args))
					e := setup(t, []engineOpt{{id: "main", name: "Main", srv: main}, {id: ag.id, p: p}})
					ch := e.chat(t, "main", task.Auto, dir)
					if _, err := e.chats.Send(ch.ID, "hand it to "+ag.name); err != nil {
						t.Fatal(err)
					}
					tk := e.onlyTask(t, ch.ID)
					if tk.Status != task.Done || tk.Kind != c.kind || tk.Provider != ag.id || tk.By != ag.name {
						t.Fatalf("task: status %s (%s) kind %s provider %q by %q", tk.Status, tk.Error, tk.Kind, tk.Provider, tk.By)
					}
					if tk.Result == nil || tk.Result.Text != "Wrote "+c.file+"." {
						t.Errorf("result %+v", tk.Result)
					}
					if b, err := os.ReadFile(filepath.Join(dir, c.file)); err != nil || string(b) != "written by "+ag.id+"\n" {
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
	for _, ag := range agents {
		t.Run(ag.id, func(t *testing.T) {
			p, _ := ag.start(t, func(modelserver.Turn) modelserver.Reply { return ag.limit })
			main := startModel(t, []string{"big-model"}, handsOff(handoff.BackgroundTool, map[string]string{"text": "count the files", "title": "Count", "provider": ag.id}))
			spare := startModel(t, []string{"f-model"}, func(_ context.Context, a asked) answer { return helperBrain(a) })
			e := setup(t, []engineOpt{{id: "main", name: "Main", srv: main}, {id: ag.id, p: p}, {id: "spare", name: "Spare", srv: spare}},
				func(e *env) { e.prefs.LimitFallback = "spare" })
			ch := e.chat(t, "main", task.Auto, t.TempDir())
			if _, err := e.chats.Send(ch.ID, "count them in the background on "+ag.name); err != nil {
				t.Fatal(err)
			}
			tk := e.onlyTask(t, ch.ID)
			if tk.Status != task.Done || tk.Provider != "spare" || tk.Note != ag.name+" reached its limit, so Spare carried on." {
				t.Fatalf("task: status %s (%s) provider %q note %q", tk.Status, tk.Error, tk.Provider, tk.Note)
			}
			if tk.Result == nil || tk.Result.Text != "Did: count the files" {
				t.Errorf("result %+v", tk.Result)
			}
		})
	}
}
