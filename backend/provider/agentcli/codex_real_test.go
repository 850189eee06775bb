//go:build unix

package agentcli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"conch/backend/provider"
	"conch/backend/task"
	"conch/backend/testrig/agentbin"
	"conch/backend/testrig/agentrig"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/responses"
)

func newCodexRig(t *testing.T, in agentbin.Install, brain modelserver.Brain, retries string) *cliRig {
	t.Helper()
	r := newRig(t, "codex")
	rig, _ := agentrig.CodexAt(t, in, r.record(brain), retries)
	r.cfg = Config{ID: "codex-1", Binary: rig.Bin, Env: rig.Env}
	return r
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
	r := newCodexRig(t, agentbin.Newest, afterResults(
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

// A per-minute 429 that outlasts codex's retries is a limit, so the task
// moves to its fallback, at the newest Codex and the oldest; each retry
// shows while the person waits.
func TestCodexRateLimitIsALimit(t *testing.T) {
	t.Parallel()
	for _, in := range agentbin.Installs {
		t.Run(string(in), func(t *testing.T) {
			t.Parallel()
			r := newCodexRig(t, in, func(modelserver.Turn) modelserver.Reply { return responses.RateLimit("gpt-5.5", 1) },
				"request_max_retries = 0\nstream_max_retries = 1\n")
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: (&asks{}).ask}))
			err := lastErr(t, evs)
			if !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), "last status: 429") {
				t.Errorf("error %v, want a limit", err)
			}
			// Codex before 0.161 does not retry this 429 (one request);
			// every retry a CLI makes shows.
			want := []string{"Codex is retrying after a rate limit (1 of 1)"}
			r.mu.Lock()
			requests := len(r.turns)
			r.mu.Unlock()
			if requests == 1 && in == agentbin.Oldest {
				want = nil
			}
			if _, _, notices := texts(evs); !slices.Equal(notices, want) || requests != len(want)+1 {
				t.Errorf("notices %q after %d requests", notices, requests)
			}
		})
	}
}

func TestCodexQuotaIsALimit(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, agentbin.Newest, func(modelserver.Turn) modelserver.Reply { return responses.Quota() }, "")
	err := lastErr(t, collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto})))
	if !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), "Quota exceeded") {
		t.Errorf("error %v, want the quota limit", err)
	}
}

// Codex is ready when its provider's key is set: `codex login status`
// would say "Not logged in" for this setup.
func TestCodexReadyWithAKeyAndNotWithout(t *testing.T) {
	t.Parallel()
	r := newCodexRig(t, agentbin.Newest, afterResults(modelserver.Reply{Text: "hi"}), "")
	info := NewCodex(r.cfg).Info(context.Background())
	if !info.Ready || info.Reason != "" || !info.CanAsk || info.Models.Default != "gpt-5.5" || !slices.Equal(info.Models.List, []string{"gpt-5.5"}) {
		t.Errorf("with a key: %+v", info)
	}
	cfg := r.cfg
	cfg.Env = append(slices.Clone(cfg.Env), agentrig.CodexKey+"=")
	info = NewCodex(cfg).Info(context.Background())
	if info.Ready || info.Reason != "Missing environment variable: `"+agentrig.CodexKey+"`." {
		t.Errorf("without a key: %+v", info)
	}
}
