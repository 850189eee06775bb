//go:build unix

package handoff_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/handoff"
	"conch/backend/internal/agentrig"
	"conch/backend/internal/modelserver"
	"conch/backend/internal/modelserver/responses"
	"conch/backend/provider"
	"conch/backend/provider/agentcli"
	"conch/backend/task"
)

// The real coding-agent CLIs take work handed off from a chat: a
// background task and a helper part each run on one and finish done, and
// one that hits a rate limit hands its task to the fallback.

// agentWrites is a CLI's scripted model: it writes the file the task's
// text names ("WRITE name.txt"), then says so.
func agentWrites(write func(name string) modelserver.Call) modelserver.Brain {
	return func(turn modelserver.Turn) modelserver.Reply {
		name := "out.txt"
		if _, rest, ok := strings.Cut(turn.FirstUser(), "WRITE "); ok {
			name = strings.Fields(rest)[0]
		}
		if len(turn.Results()) == 0 {
			return modelserver.Reply{Calls: []modelserver.Call{write(name)}}
		}
		return modelserver.Reply{Text: "Wrote " + name + "."}
	}
}

func codexWrites(name string) modelserver.Call {
	return responses.Patch("call_w", "*** Begin Patch\n*** Add File: "+name+"\n+written by codex\n*** End Patch\n")
}

func newCodex(t *testing.T, brain modelserver.Brain, retries string) (provider.Provider, *responses.Server) {
	rig, srv := agentrig.Codex(t, brain, retries)
	return agentcli.NewCodex(agentcli.Config{ID: "codex", Name: "Codex", Binary: rig.Bin, Env: rig.Env}), srv
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

func TestACodexHelperPartAndBackgroundTaskFinishDone(t *testing.T) {
	codex, srv := newCodex(t, agentWrites(codexWrites), "")
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		tool string
		args any
		file string
		kind task.Kind
	}{
		{"helper", handoff.DelegateTool, map[string]any{"parts": []map[string]any{
			{"title": "Tests", "instructions": "WRITE tests.txt with the tests", "provider": "Codex"},
		}}, "tests.txt", task.Helper},
		{"background", handoff.BackgroundTool, map[string]string{"text": "WRITE notes.txt please", "title": "Notes", "provider": "codex"},
			"notes.txt", task.Background},
	} {
		t.Run(c.name, func(t *testing.T) {
			main := startModel(t, []string{"big-model"}, handsOff(c.tool, c.args))
			e := setup(t, []engineOpt{{id: "main", name: "Main", srv: main}, {id: "codex", p: codex}})
			ch := e.chat(t, "main", task.Auto, dir)
			if _, err := e.chats.Send(ch.ID, "hand it to Codex"); err != nil {
				t.Fatal(err)
			}
			var tk task.Task
			eventually(t, "the task on Codex to finish", func() bool {
				tasks := e.tasksOf(ch.ID)
				if len(tasks) == 1 {
					tk = tasks[0]
				}
				return len(tasks) == 1 && tk.Status.Finished()
			})
			if tk.Status != task.Done || tk.Kind != c.kind || tk.Provider != "codex" || tk.By != "Codex" {
				t.Fatalf("task: status %s (%s) kind %s provider %q by %q", tk.Status, tk.Error, tk.Kind, tk.Provider, tk.By)
			}
			if tk.Result == nil || tk.Result.Text != "Wrote "+c.file+"." {
				t.Errorf("result %+v", tk.Result)
			}
			if b, err := os.ReadFile(filepath.Join(dir, c.file)); err != nil || string(b) != "written by codex\n" {
				t.Errorf("%s: %q %v", c.file, b, err)
				for _, tn := range srv.Turns() {
					t.Logf("turn model %s tools %v results %+v", tn.Model, tn.Tools, tn.Results())
				}
				for _, m := range e.messages(t, tk.ConversationID) {
					t.Logf("%s: %s %+v", m.Kind, m.Text, m.Ask)
				}
			}
		})
	}
	if len(srv.Turns()) < 4 {
		t.Errorf("codex's model was asked %d times, want 2 per task", len(srv.Turns()))
	}
}

func TestACodexTaskAtItsRateLimitGoesToTheFallback(t *testing.T) {
	codex, _ := newCodex(t, func(modelserver.Turn) modelserver.Reply { return responses.RateLimit("gpt-5.5", 1) }, "")
	main := startModel(t, []string{"big-model"}, handsOff(handoff.BackgroundTool, map[string]string{"text": "count the files", "title": "Count", "provider": "codex"}))
	spare := startModel(t, []string{"f-model"}, func(_ context.Context, a asked) answer { return helperBrain(a) })
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: main}, {id: "codex", p: codex}, {id: "spare", name: "Spare", srv: spare}},
		func(e *env) { e.prefs.LimitFallback = "spare" })
	ch := e.chat(t, "main", task.Auto, t.TempDir())
	if _, err := e.chats.Send(ch.ID, "count them in the background on Codex"); err != nil {
		t.Fatal(err)
	}
	var tk task.Task
	eventually(t, "the task to finish", func() bool {
		tasks := e.tasksOf(ch.ID)
		if len(tasks) == 1 {
			tk = tasks[0]
		}
		return len(tasks) == 1 && tk.Status.Finished()
	})
	if tk.Status != task.Done || tk.Provider != "spare" || tk.Note != "Codex reached its limit, so Spare carried on." {
		t.Fatalf("task: status %s (%s) provider %q note %q", tk.Status, tk.Error, tk.Provider, tk.Note)
	}
	if tk.Result == nil || tk.Result.Text != "Did: count the files" {
		t.Errorf("result %+v", tk.Result)
	}
}
