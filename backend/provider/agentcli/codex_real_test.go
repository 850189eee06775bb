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
	"conch/backend/internal/modelserver/responses"
	"conch/backend/provider"
	"conch/backend/task"
)

// codexRig is the real Codex CLI against a scripted Responses server.
type codexRig struct {
	cfg Config
	srv *responses.Server
	cwd string
}

const codexKey = agentrig.CodexKey

func newCodexRig(t *testing.T, brain modelserver.Brain, retries string) *codexRig {
	t.Helper()
	rig, srv := agentrig.Codex(t, brain, retries)
	return &codexRig{cfg: Config{ID: "codex-1", Binary: rig.Bin, Env: rig.Env}, srv: srv, cwd: t.TempDir()}
}

func (r *codexRig) stream(t *testing.T, ctx context.Context, req provider.Request) <-chan provider.Event {
	t.Helper()
	req.Cwd = r.cwd
	if req.Messages == nil {
		req.Messages = userSays("Do the thing.")
	}
	ch, err := NewCodex(r.cfg).Stream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// afterResults answers a turn by how many tool results it holds.
func afterResults(replies ...modelserver.Reply) modelserver.Brain {
	return func(turn modelserver.Turn) modelserver.Reply {
		if n := len(turn.Results()); n < len(replies) {
			return replies[n]
		}
		return replies[len(replies)-1]
	}
}

func calls(c ...modelserver.Call) modelserver.Reply { return modelserver.Reply{Calls: c} }

func TestCodexInAutoWritesAFile(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, afterResults(
		calls(responses.Patch("call_p", "*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n")),
		modelserver.Reply{Text: "I wrote hello.txt."},
	), "")
	gate := &asks{}
	evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: gate.ask}))
	reply, steps, _ := texts(evs)
	if last := evs[len(evs)-1]; last.Kind != provider.DoneEvent {
		t.Fatalf("ended with %+v", briefs(evs[len(evs)-1:]))
	}
	if b, err := os.ReadFile(filepath.Join(r.cwd, "hello.txt")); err != nil || string(b) != "hello from codex\n" {
		t.Fatalf("hello.txt: %q, %v", b, err)
	}
	if reply != "I wrote hello.txt." || !slices.Equal(steps, []string{"Edited hello.txt"}) {
		t.Errorf("reply %q, steps %q", reply, steps)
	}
	// The edit came to Conch's gate first, with the file it writes.
	got := gate.all()
	if len(got) != 1 || got[0].Effect != "edit" || got[0].Detail != "Edit hello.txt?" ||
		!slices.Equal(got[0].Paths, []string{filepath.Join(r.cwd, "hello.txt")}) {
		t.Errorf("asked %+v", got)
	}
}

func TestCodexAsksAndTheAnswerHolds(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowed", false: "declined"}[allow], func(t *testing.T) {
			t.Parallel()
			r := newCodexRig(t, afterResults(
				calls(responses.Exec("call_x", "printf hi > made.txt")),
				modelserver.Reply{Text: "Finished."},
			), "")
			gate := &asks{answer: func(provider.Action) bool { return allow }}
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Ask, Ask: gate.ask}))
			_, steps, _ := texts(evs)
			got := gate.all()
			if len(got) != 1 || got[0].Effect != "command" || got[0].Command != "printf hi > made.txt" ||
				got[0].Detail != "Run `printf hi > made.txt` in "+tilde(r.cwd)+"?" {
				t.Fatalf("asked %+v", got)
			}
			_, err := os.Stat(filepath.Join(r.cwd, "made.txt"))
			turns := r.srv.Turns()
			seen := turns[len(turns)-1].Results()
			if allow {
				if err != nil || !slices.Equal(steps, []string{"Ran printf hi > made.txt"}) {
					t.Errorf("allowed: made.txt %v, steps %q", err, steps)
				}
				return
			}
			if err == nil || !slices.Equal(steps, []string{"Declined: run `printf hi > made.txt` in " + tilde(r.cwd)}) {
				t.Errorf("declined: made.txt %v, steps %q", err, steps)
			}
			if len(seen) != 1 || !strings.Contains(seen[0].Text, "rejected by user") {
				t.Errorf("the model saw %+v", seen)
			}
		})
	}
}

// Stop while a command runs ends codex and the command, which codex
// starts in a session of its own, and nothing is left.
func TestCodexStopEndsTheWholeTree(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, afterResults(calls(responses.Exec("call_s", "sleep 300")), modelserver.Reply{Text: "slept"}), "")
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

// A per-minute 429 that outlasts codex's retries is a limit, so the task
// moves to its fallback; each retry shows while the person waits.
func TestCodexRateLimitIsALimit(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, func(modelserver.Turn) modelserver.Reply { return responses.RateLimit("gpt-5.5", 1) },
		"request_max_retries = 0\nstream_max_retries = 1\n")
	evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: (&asks{}).ask}))
	err := lastErr(t, evs)
	if !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), "last status: 429") {
		t.Errorf("error %v, want a limit", err)
	}
	if _, _, notices := texts(evs); !slices.Equal(notices, []string{"Codex is retrying after a rate limit (1 of 1)"}) {
		t.Errorf("notices %q", notices)
	}
}

func TestCodexQuotaIsALimit(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, func(modelserver.Turn) modelserver.Reply { return responses.Quota() }, "")
	err := lastErr(t, collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto})))
	if !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), "Quota exceeded") {
		t.Errorf("error %v, want the quota limit", err)
	}
}

// Codex is ready when its provider's key is set: `codex login status`
// would say "Not logged in" for this setup.
func TestCodexReadyWithAKeyAndNotWithout(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, afterResults(modelserver.Reply{Text: "hi"}), "")
	info := NewCodex(r.cfg).Info(context.Background())
	if !info.Ready || info.Reason != "" || !info.CanAsk || info.Models.Default != "gpt-5.5" || !slices.Equal(info.Models.List, []string{"gpt-5.5"}) {
		t.Errorf("with a key: %+v", info)
	}
	cfg := r.cfg
	cfg.Env = append(slices.Clone(cfg.Env), codexKey+"=")
	info = NewCodex(cfg).Info(context.Background())
	if info.Ready || info.Reason != "Missing environment variable: `"+codexKey+"`." {
		t.Errorf("without a key: %+v", info)
	}
}

// Conch's own tools reach codex over MCP and run through Request.Call.
func TestCodexCallsConchsTools(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, func(turn modelserver.Turn) modelserver.Reply {
		switch len(turn.Results()) {
		case 0:
			return calls(responses.Search("call_find", "start a background task"))
		case 1:
			if !slices.Contains(turn.Tools, "mcp__conch__start_background_task") {
				return modelserver.Reply{Text: "no such tool: " + strings.Join(turn.Tools, ",")}
			}
			return calls(modelserver.Call{ID: "call_bg", Name: "mcp__conch__start_background_task", Args: json.RawMessage(`{"text":"write the tests"}`)})
		}
		return modelserver.Reply{Text: "Started it."}
	}, "")
	var got []string
	evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{
		Mode: task.Ask, Ask: (&asks{answer: func(provider.Action) bool { return false }}).ask,
		Tools: []provider.ToolSpec{{Name: "start_background_task", Description: "Start a background task in Conch.",
			Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}},
		Call: func(_ context.Context, name string, args json.RawMessage) (string, bool) {
			got = append(got, name+" "+string(args))
			return "Task t-1 started.", false
		},
	}))
	reply, _, _ := texts(evs)
	if reply != "Started it." || !slices.Equal(got, []string{`start_background_task {"text":"write the tests"}`}) {
		t.Fatalf("reply %q, calls %q", reply, got)
	}
	turns := r.srv.Turns()
	if res := turns[len(turns)-1].Results(); len(res) != 2 || !strings.Contains(res[1].Text, "Task t-1 started.") {
		t.Errorf("the model saw %+v", res)
	}
}
