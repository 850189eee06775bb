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
	"testing"
	"time"

	"conch/backend/internal/agentrig"
	"conch/backend/internal/modelserver"
	"conch/backend/internal/modelserver/gemini"
	"conch/backend/provider"
	"conch/backend/task"
)

// geminiRig is the real Gemini CLI against a scripted Gemini API server.
type geminiRig struct {
	cfg Config
	srv *gemini.Server
	cwd string
}

func newGeminiRig(t *testing.T, brain modelserver.Brain, attempts int) *geminiRig {
	t.Helper()
	rig, srv := agentrig.Gemini(t, brain, attempts)
	return &geminiRig{cfg: Config{ID: "gemini-1", Binary: rig.Bin, Env: rig.Env, Model: "gemini-2.5-flash"}, srv: srv, cwd: t.TempDir()}
}

func (r *geminiRig) stream(t *testing.T, ctx context.Context, req provider.Request) <-chan provider.Event {
	t.Helper()
	req.Cwd = r.cwd
	if req.Messages == nil {
		req.Messages = userSays("Do the thing.")
	}
	ch, err := NewGemini(r.cfg).Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// In auto the gate answers at once; the file is written in a folder the
// CLI was never told to trust; the step shows once it has run; the
// messages of the reply do not run together.
func TestGeminiInAutoWritesAFile(t *testing.T) {
	t.Parallel()
	r := newGeminiRig(t, afterResults(
		modelserver.Reply{Text: "Writing it first.", Calls: []modelserver.Call{use("c1", "write_file", map[string]string{"file_path": "hello.txt", "content": "hello from gemini\n"})}},
		modelserver.Reply{Text: "All done."},
	), 1)
	gate := &asks{}
	evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: gate.ask}))
	if last := evs[len(evs)-1]; last.Kind != provider.DoneEvent {
		t.Fatalf("ended with %+v", briefs(evs[len(evs)-1:]))
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "hello.txt")); err != nil || string(b) != "hello from gemini\n" {
		t.Fatalf("hello.txt: %q, %v", b, err)
	}
	reply, steps, _ := texts(evs)
	if reply != "Writing it first.\n\nAll done." || !slices.Equal(steps, []string{"Wrote hello.txt"}) {
		t.Errorf("reply %q, steps %q", reply, steps)
	}
	got := gate.all()
	if len(got) != 1 || got[0].Tool != "write_file" || got[0].Effect != "edit" || !slices.Equal(got[0].Paths, []string{filepath.Join(r.cwd, "hello.txt")}) {
		t.Errorf("asked %+v", got)
	}
}

func TestGeminiAsksAndTheAnswerHolds(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowed", false: "declined"}[allow], func(t *testing.T) {
			t.Parallel()
			r := newGeminiRig(t, afterResults(
				calls(use("c1", "run_shell_command", map[string]string{"command": "echo hi > made.txt", "description": "make a file"})),
				modelserver.Reply{Text: "Finished."},
			), 1)
			gate := &asks{answer: func(provider.Action) bool { return allow }}
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Ask, Ask: gate.ask}))
			reply, steps, _ := texts(evs)
			got := gate.all()
			if len(got) != 1 || got[0].Effect != "command" || got[0].Command != "echo hi > made.txt" ||
				got[0].Detail != "Run `echo hi > made.txt` in "+tilde(r.cwd)+"?" {
				t.Fatalf("asked %+v", got)
			}
			_, err := os.Stat(filepath.Join(r.cwd, "made.txt"))
			turns := r.srv.Turns()
			seen := turns[len(turns)-1].Results()
			if reply != "Finished." {
				t.Errorf("reply %q", reply)
			}
			if allow {
				if err != nil || !slices.Equal(steps, []string{"Ran echo hi > made.txt"}) {
					t.Errorf("allowed: made.txt %v, steps %q", err, steps)
				}
				return
			}
			if err == nil || !slices.Equal(steps, []string{"Declined: run `echo hi > made.txt` in " + tilde(r.cwd)}) {
				t.Errorf("declined: made.txt %v, steps %q", err, steps)
			}
			if len(seen) != 1 || !strings.Contains(seen[0].Text, "canceled by the user") {
				t.Errorf("the model saw %+v", seen)
			}
		})
	}
}

// Stop while a command runs ends Gemini CLI and the command, which it
// runs in a session of its own.
func TestGeminiStopEndsTheWholeTree(t *testing.T) {
	t.Parallel()
	r := newGeminiRig(t, afterResults(
		calls(use("c1", "run_shell_command", map[string]string{"command": "sleep 300", "description": "wait"})),
		modelserver.Reply{Text: "slept"}), 1)
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
}

// Per-minute and daily quotas are limits.
func TestGeminiQuotasAreLimits(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		reply modelserver.Reply
		want  string
	}{
		"per-minute": {gemini.PerMinuteLimit("gemini-2.5-flash", "1s"), "You exceeded your current quota"},
		"daily":      {gemini.DailyQuota("gemini-2.5-flash"), "You have exhausted your daily quota on this model."},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newGeminiRig(t, func(modelserver.Turn) modelserver.Reply { return c.reply }, 1)
			err := lastErr(t, collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: (&asks{}).ask})))
			if !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want a limit saying %q", err, c.want)
			}
		})
	}
}

// Conch's own tools reach Gemini over MCP and run through Request.Call,
// which checks them; Gemini's own question about them is answered at once.
func TestGeminiCallsConchsTools(t *testing.T) {
	t.Parallel()
	r := newGeminiRig(t, func(turn modelserver.Turn) modelserver.Reply {
		if len(turn.Results()) == 0 {
			if !slices.Contains(turn.Tools, "mcp_conch_start_background_task") {
				return modelserver.Reply{Text: "no such tool: " + strings.Join(turn.Tools, ",")}
			}
			return calls(use("c1", "mcp_conch_start_background_task", map[string]string{"text": "write the tests"}))
		}
		return modelserver.Reply{Text: "Started it."}
	}, 1)
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
	turns := r.srv.Turns()
	if res := turns[len(turns)-1].Results(); len(res) != 1 || !strings.Contains(res[0].Text, "Task t-1 started.") {
		t.Errorf("the model saw %+v", res)
	}
}

// Gemini CLI says nothing over ACP while it retries; Conch reads its
// stderr and shows each retry.
func TestGeminiRetriesShow(t *testing.T) {
	t.Parallel()
	r := newGeminiRig(t, func(modelserver.Turn) modelserver.Reply { return gemini.PerMinuteLimit("gemini-2.5-flash", "1s") }, 2)
	evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: (&asks{}).ask}))
	if err := lastErr(t, evs); !errors.Is(err, provider.ErrLimit) {
		t.Errorf("error %v, want a limit", err)
	}
	if _, _, notices := texts(evs); !slices.Equal(notices, []string{"Gemini CLI is retrying after a rate limit (1 of 1)"}) {
		t.Errorf("notices %q", notices)
	}
}
