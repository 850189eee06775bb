//go:build unix

package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/provider"
	"conch/backend/task"
	"conch/backend/testrig/agentbin"
	"conch/backend/testrig/agentrig"
	"conch/backend/testrig/modelserver"
)

// What each real CLI must do alike, one table over agentrig.Agents.

// cliRig is one real CLI against its scripted model server, which
// records what the model was asked.
type cliRig struct {
	cfg  Config
	kind string
	cwd  string

	mu    sync.Mutex
	turns []modelserver.Turn
}

func newRig(t *testing.T, kind string) *cliRig {
	return &cliRig{kind: kind, cwd: t.TempDir()}
}

// record wraps brain to keep each turn.
func (r *cliRig) record(brain modelserver.Brain) modelserver.Brain {
	return func(turn modelserver.Turn) modelserver.Reply {
		r.mu.Lock()
		r.turns = append(r.turns, turn)
		r.mu.Unlock()
		return brain(turn)
	}
}

// newAgentRig is a's CLI set up as agentrig does for every agent.
func newAgentRig(t *testing.T, a agentrig.Agent, brain modelserver.Brain) *cliRig {
	t.Helper()
	r := newRig(t, a.Kind)
	rig, _ := a.Start(t, r.record(brain))
	r.cfg = Config{ID: a.ID, Name: a.Name, Binary: rig.Bin, Env: rig.Env, Model: a.Model}
	return r
}

func (r *cliRig) stream(t *testing.T, ctx context.Context, req provider.Request) <-chan provider.Event {
	t.Helper()
	req.Cwd = r.cwd
	if req.Messages == nil {
		req.Messages = userSays("Do the thing.")
	}
	ch, err := New(r.kind, r.cfg).Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// lastResults are the tool results the model saw last.
func (r *cliRig) lastResults() []modelserver.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.turns[len(r.turns)-1].Results()
}

// declinedWords are what each CLI tells its model of a declined step.
var declinedWords = map[string]string{"claude": declined, "codex": "rejected by user", "gemini": "canceled by the user"}

// atBothEnds are the CLIs at the newest version Conch was tested with
// and at the oldest it works with.
func atBothEnds() []agentrig.Agent {
	var out []agentrig.Agent
	for _, in := range agentbin.Installs {
		out = append(out, agentrig.AgentsAt(in)...)
	}
	return out
}

func TestEachCLIAsksAndTheAnswerHolds(t *testing.T) {
	t.Parallel()
	for _, a := range atBothEnds() {
		for _, allow := range []bool{true, false} {
			t.Run(string(a.Install)+"/"+a.ID+"/"+map[bool]string{true: "allowed", false: "declined"}[allow], func(t *testing.T) {
				t.Parallel()
				r := newAgentRig(t, a, afterResults(calls(a.Run("echo hi > made.txt")), modelserver.Reply{Text: "Finished."}))
				gate := &asks{answer: func(provider.Action) bool { return allow }}
				evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Ask, Ask: gate.ask}))
				reply, steps, _ := texts(evs)
				got := gate.all()
				if len(got) != 1 || got[0].Effect != "command" || got[0].Command != "echo hi > made.txt" ||
					got[0].Detail != "Run `echo hi > made.txt` in "+tilde(r.cwd)+"?" {
					t.Fatalf("asked %+v", got)
				}
				_, err := os.Stat(filepath.Join(r.cwd, "made.txt"))
				want := []string{"Ran echo hi > made.txt"}
				if !allow {
					want = []string{"Declined: run `echo hi > made.txt` in " + tilde(r.cwd)}
				}
				if (err == nil) != allow || !slices.Equal(steps, want) || reply != "Finished." {
					t.Errorf("made.txt: %v; steps %q, want %q; reply %q", err, steps, want, reply)
				}
				if seen := r.lastResults(); !allow && (len(seen) != 1 || !strings.Contains(seen[0].Text, declinedWords[a.ID])) {
					t.Errorf("the model saw %+v", seen)
				}
			})
		}
	}
}

// A file write each CLI asks about carries what it would write, so the
// person sees the change before allowing it.
func TestEachCLIShowsTheWriteItAsksAbout(t *testing.T) {
	t.Parallel()
	for _, a := range agentrig.Agents {
		t.Run(a.ID, func(t *testing.T) {
			t.Parallel()
			r := newAgentRig(t, a, afterResults(calls(a.Write("notes.txt", "the plan, written down")), modelserver.Reply{Text: "Wrote it."}))
			gate := &asks{}
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Ask, Ask: gate.ask}))
			var edits []provider.Action
			for _, act := range gate.all() {
				if act.Effect == "edit" {
					edits = append(edits, act)
				}
			}
			if len(edits) != 1 {
				t.Fatalf("asked %+v; want one question about the write", gate.all())
			}
			w := edits[0].Write
			if w == nil || w.Path != "notes.txt" || !strings.Contains(w.New, "the plan, written down") || w.Old != "" {
				t.Fatalf("the question's write is %+v", w)
			}
			if b, err := os.ReadFile(filepath.Join(r.cwd, "notes.txt")); err != nil || !strings.Contains(string(b), "the plan, written down") {
				t.Fatalf("notes.txt after the write was allowed: %q, %v (events %+v)", b, err, evs)
			}
		})
	}
}

// An edit each CLI asks about carries what it takes out and puts in.
func TestEachCLIShowsTheEditItAsksAbout(t *testing.T) {
	t.Parallel()
	for _, a := range agentrig.Agents {
		t.Run(a.ID, func(t *testing.T) {
			t.Parallel()
			r := newAgentRig(t, a, afterResults(calls(a.Edit("plan.md", "ship on friday", "ship on monday")), modelserver.Reply{Text: "Changed it."}))
			if err := os.WriteFile(filepath.Join(r.cwd, "plan.md"), []byte("# Plan\nship on friday\nthen rest\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gate := &asks{}
			collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Ask, Ask: gate.ask}))
			var w *provider.Write
			for _, act := range gate.all() {
				if act.Effect == "edit" && act.Write != nil {
					w = act.Write
				}
			}
			if w == nil || w.Path != "plan.md" || w.Whole || !strings.Contains(w.Old, "ship on friday") || !strings.Contains(w.New, "ship on monday") ||
				strings.Contains(w.New, "friday") || strings.Contains(w.Old, "monday") {
				t.Fatalf("asked %+v; the write is %+v", gate.all(), w)
			}
			if b, _ := os.ReadFile(filepath.Join(r.cwd, "plan.md")); string(b) != "# Plan\nship on monday\nthen rest\n" {
				t.Fatalf("plan.md after the edit was allowed: %q", b)
			}
		})
	}
}

// Stop while a command runs ends the CLI and the command, which each CLI
// starts in a session of its own, and nothing is left.
func TestEachCLIStopEndsTheWholeTree(t *testing.T) {
	t.Parallel()
	for _, a := range atBothEnds() {
		t.Run(string(a.Install)+"/"+a.ID, func(t *testing.T) {
			t.Parallel()
			// Claude Code refuses a bare sleep.
			r := newAgentRig(t, a, afterResults(calls(a.Run("echo started; sleep 300; echo finished")), modelserver.Reply{Text: "slept"}))
			mark := testMark(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := r.stream(t, ctx, provider.Request{Mode: task.Auto, Ask: (&asks{}).ask, Mark: mark})
			waitFor(t, time.Minute, "sleep 300 to run", func() bool {
				return slices.ContainsFunc(marked(mark.Home), func(p string) bool { return strings.HasSuffix(p, " sleep 300") })
			})
			stopped := time.Now()
			cancel()
			evs := collectFor(t, 10*time.Second, ch)
			if err := lastErr(t, evs); !errors.Is(err, context.Canceled) {
				t.Errorf("ended with %v", err)
			}
			if left := marked(mark.Home); len(left) > 0 {
				t.Fatalf("%s after stop, left running: %q", time.Since(stopped).Round(time.Millisecond), left)
			}
		})
	}
}

// Conch's own tools reach each CLI over MCP and run through Request.Call,
// which checks them; the CLI's own question about them, if it has one, is
// not put to the gate.
func TestEachCLICallsConchsTools(t *testing.T) {
	t.Parallel()
	for _, a := range agentrig.Agents {
		t.Run(a.ID, func(t *testing.T) {
			t.Parallel()
			script := a.Conch("start_background_task", map[string]string{"text": "write the tests"})
			r := newAgentRig(t, a, func(turn modelserver.Turn) modelserver.Reply {
				if n := len(turn.Results()); n < len(script) {
					return calls(script[n])
				}
				return modelserver.Reply{Text: "Started it."}
			})
			gate := &asks{answer: func(provider.Action) bool { return false }}
			var got []string
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{
				Mode: task.Ask, Ask: gate.ask,
				Tools: []provider.ToolSpec{{Name: "start_background_task", Description: "Start a background task in Conch.",
					Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}},
				Call: func(_ context.Context, name string, args json.RawMessage) (string, bool) {
					got = append(got, name+" "+string(args))
					return "Task t-1 started.", false
				},
			}))
			reply, steps, _ := texts(evs)
			if reply != "Started it." || !slices.Equal(got, []string{`start_background_task {"text":"write the tests"}`}) || len(steps) != 0 {
				t.Fatalf("reply %q, calls %q, steps %q", reply, got, steps)
			}
			if asked := gate.all(); len(asked) != 0 {
				t.Errorf("the gate was asked about Conch's own tool: %+v", asked)
			}
			if res := r.lastResults(); len(res) != len(script) || !strings.Contains(res[len(res)-1].Text, "Task t-1 started.") {
				t.Errorf("the model saw %+v", res)
			}
		})
	}
}

// Each CLI says its version; from the oldest Conch works with it is
// ready, and one older than the floor is not, saying how to update it.
func TestEachCLIIsReadyFromItsOldestVersion(t *testing.T) {
	t.Parallel()
	floors := map[string]cliFloor{"claude": claudeFloor, "codex": codexFloor, "gemini": geminiFloor}
	for _, a := range atBothEnds() {
		t.Run(string(a.Install)+"/"+a.ID, func(t *testing.T) {
			t.Parallel()
			f := floors[a.ID]
			r := newAgentRig(t, a, afterResults(modelserver.Reply{Text: "hi"}))
			info := New(a.Kind, r.cfg).Info(context.Background())
			if !info.Ready || info.Reason != "" || info.Version == "" {
				t.Fatalf("%+v", info)
			}
			if old := info.Version == f.oldest; old != (a.Install == agentbin.Oldest) || versionLess(info.Version, f.oldest) {
				t.Errorf("version %s; the oldest Conch works with is %s", info.Version, f.oldest)
			}
			cfg := r.cfg
			cfg.Oldest = "99.0.0"
			info = New(a.Kind, cfg).Info(context.Background())
			want := f.product + " " + info.Version + " is older than 99.0.0, the oldest Conch works with; update it: npm install -g " + f.pkg
			if info.Ready || info.Reason != want {
				t.Errorf("below the floor: %+v, want the reason %q", info, want)
			}
		})
	}
}
