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
	"conch/backend/internal/modelserver/anthropic"
	"conch/backend/provider"
	"conch/backend/task"
)

// claudeRig is the real Claude Code against a scripted Anthropic server.
type claudeRig struct {
	cfg Config
	srv *anthropic.Server
	cwd string
}

func newClaudeRig(t *testing.T, brain modelserver.Brain, retries int) *claudeRig {
	t.Helper()
	rig, srv := agentrig.Claude(t, brain, retries)
	return &claudeRig{cfg: Config{ID: "claude-1", Binary: rig.Bin, Env: rig.Env}, srv: srv, cwd: t.TempDir()}
}

func (r *claudeRig) stream(t *testing.T, ctx context.Context, req provider.Request) <-chan provider.Event {
	t.Helper()
	req.Cwd = r.cwd
	if req.Messages == nil {
		req.Messages = userSays("Do the thing.")
	}
	ch, err := NewClaude(r.cfg).Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func use(id, name string, args any) modelserver.Call {
	b, _ := json.Marshal(args)
	return modelserver.Call{ID: id, Name: name, Args: b}
}

// In auto, Conch's gate answers Claude's question at once (so it runs as
// root too, which bypassPermissions may not), the file is written, the
// step shows once it has run, and the reply streams as it comes.
func TestClaudeInAutoWritesAFile(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t, afterResults(
		calls(use("toolu_w", "Write", map[string]string{"file_path": "hello.txt", "content": "hello from claude\n"})),
		modelserver.Reply{Text: "I wrote hello.txt for you, as you asked."},
	), 0)
	gate := &asks{}
	evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: gate.ask}))
	if last := evs[len(evs)-1]; last.Kind != provider.DoneEvent {
		t.Fatalf("ended with %+v", briefs(evs[len(evs)-1:]))
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "hello.txt")); err != nil || string(b) != "hello from claude\n" {
		t.Fatalf("hello.txt: %q, %v", b, err)
	}
	reply, steps, _ := texts(evs)
	if reply != "I wrote hello.txt for you, as you asked." || !slices.Equal(steps, []string{"Wrote hello.txt"}) {
		t.Errorf("reply %q, steps %q", reply, steps)
	}
	deltas := 0
	for _, ev := range evs {
		if ev.Kind == provider.TextDelta {
			deltas++
		}
	}
	if deltas < 2 {
		t.Errorf("the reply came in %d piece(s): it should stream", deltas)
	}
	got := gate.all()
	if len(got) != 1 || got[0].Tool != "Write" || got[0].Effect != "edit" || !slices.Equal(got[0].Paths, []string{filepath.Join(r.cwd, "hello.txt")}) {
		t.Errorf("asked %+v", got)
	}
}

func TestClaudeAsksAndTheAnswerHolds(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowed", false: "declined"}[allow], func(t *testing.T) {
			t.Parallel()
			r := newClaudeRig(t, afterResults(
				calls(use("toolu_b", "Bash", map[string]string{"command": "echo hi > made.txt", "description": "make a file"})),
				modelserver.Reply{Text: "Finished."},
			), 0)
			gate := &asks{answer: func(provider.Action) bool { return allow }}
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Ask, Ask: gate.ask}))
			_, steps, _ := texts(evs)
			got := gate.all()
			if len(got) != 1 || got[0].Effect != "command" || got[0].Command != "echo hi > made.txt" ||
				got[0].Detail != "Run `echo hi > made.txt` in "+tilde(r.cwd)+"?" {
				t.Fatalf("asked %+v", got)
			}
			_, err := os.Stat(filepath.Join(r.cwd, "made.txt"))
			turns := r.srv.Turns()
			seen := turns[len(turns)-1].Results()
			if allow {
				if err != nil || !slices.Equal(steps, []string{"Ran echo hi > made.txt"}) {
					t.Errorf("allowed: made.txt %v, steps %q", err, steps)
				}
				return
			}
			if err == nil || !slices.Equal(steps, []string{"Declined: run `echo hi > made.txt` in " + tilde(r.cwd)}) {
				t.Errorf("declined: made.txt %v, steps %q", err, steps)
			}
			if len(seen) != 1 || !strings.Contains(seen[0].Text, declined) {
				t.Errorf("the model saw %+v", seen)
			}
		})
	}
}

// Stop while a command runs ends Claude Code and the command, which its
// Bash tool starts in a session of its own.
func TestClaudeStopEndsTheWholeTree(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t, afterResults(
		calls(use("toolu_s", "Bash", map[string]string{"command": "echo started; sleep 300; echo finished"})),
		modelserver.Reply{Text: "slept"}), 0)
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

// A 429 the CLI's own retries do not get past is a limit; each retry
// shows while the person waits.
func TestClaudeRateLimitIsALimit(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t, func(modelserver.Turn) modelserver.Reply { return anthropic.RateLimit("1") }, 1)
	evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: (&asks{}).ask}))
	err := lastErr(t, evs)
	if !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), "per-minute rate limit") {
		t.Errorf("error %v, want a limit", err)
	}
	reply, _, notices := texts(evs)
	if !slices.Equal(notices, []string{"Claude Code is retrying after a rate limit (1 of 1)"}) || reply != "" {
		t.Errorf("notices %q, reply %q", notices, reply)
	}
}

func TestClaudeReadyWithAKeyAndNotWithout(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t, afterResults(modelserver.Reply{Text: "hi"}), 0)
	if info := NewClaude(r.cfg).Info(context.Background()); !info.Ready || info.Reason != "" || !info.CanAsk {
		t.Errorf("with a key: %+v", info)
	}
	cfg := r.cfg
	cfg.Env = append(slices.Clone(cfg.Env), "ANTHROPIC_API_KEY=")
	if info := NewClaude(cfg).Info(context.Background()); info.Ready || info.Reason != claudeLogin {
		t.Errorf("without a key: %+v", info)
	}
}

// Conch's own tools reach Claude over MCP and run through Request.Call,
// which checks them; Claude does not ask about them first.
func TestClaudeCallsConchsTools(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t, afterResults(
		calls(use("toolu_bg", "mcp__conch__start_background_task", map[string]string{"text": "write the tests"})),
		modelserver.Reply{Text: "Started it."},
	), 0)
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
		t.Errorf("Claude asked about Conch's own tool: %+v", asked)
	}
	turns := r.srv.Turns()
	if res := turns[len(turns)-1].Results(); len(res) != 1 || !strings.Contains(res[0].Text, "Task t-1 started.") {
		t.Errorf("the model saw %+v", res)
	}
}
