//go:build unix

package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"conch/backend/testrig/modelserver/anthropic"
)

func newClaudeRig(t *testing.T, in agentbin.Install, brain modelserver.Brain, retries int) *cliRig {
	t.Helper()
	r := newRig(t, "claude")
	rig, _ := agentrig.ClaudeAt(t, in, r.record(brain), retries)
	r.cfg = Config{ID: "claude-1", Binary: rig.Bin, Env: rig.Env}
	return r
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
	r := newClaudeRig(t, agentbin.Newest, afterResults(
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

// A 429 the CLI's own retries do not get past is a limit; each retry
// shows while the person waits, at the newest Claude Code and the oldest.
func TestClaudeRateLimitIsALimit(t *testing.T) {
	t.Parallel()
	for _, in := range agentbin.Installs {
		t.Run(string(in), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			n := 0
			r := newClaudeRig(t, in, func(modelserver.Turn) modelserver.Reply {
				mu.Lock()
				n++
				mu.Unlock()
				return anthropic.RateLimitSaying("This request would exceed the rate limit for your organization of 50 requests per minute.", "2")
			}, 2)
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: (&asks{}).ask}))
			err := lastErr(t, evs)
			if !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), "50 requests per minute") {
				t.Errorf("error %v, want a limit", err)
			}
			reply, _, notices := texts(evs)
			want := []string{"Claude Code is retrying after a rate limit (1 of 2)", "Claude Code is retrying after a rate limit (2 of 2)"}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(notices, want) || reply != "" || n != 3 {
				t.Errorf("notices %q, reply %q after %d calls", notices, reply, n)
			}
		})
	}
}

// In plan a command is refused, and shows as declined, not as run: the
// newest Claude Code refuses it itself and says so in tool_result_meta;
// the oldest asks Conch, whose gate refuses, and marks the result only as
// an error.
func TestClaudePlanRefusalShowsAsDeclined(t *testing.T) {
	t.Parallel()
	for _, in := range agentbin.Installs {
		t.Run(string(in), func(t *testing.T) {
			t.Parallel()
			r := newClaudeRig(t, in, afterResults(calls(use("toolu_r", "Bash", map[string]string{"command": "echo hi > hello.txt", "description": "run it"})),
				modelserver.Reply{Text: "I would write hello.txt."}), 0)
			gate := &asks{answer: func(provider.Action) bool { return false }}
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Plan, Ask: gate.ask}))
			reply, steps, _ := texts(evs)
			want := []string{"Declined: run `echo hi > hello.txt` in " + tilde(r.cwd)}
			if !slices.Equal(steps, want) || reply != "I would write hello.txt." {
				t.Errorf("steps %q, want %q; reply %q", steps, want, reply)
			}
			if _, err := os.Stat(filepath.Join(r.cwd, "hello.txt")); err == nil {
				t.Errorf("hello.txt was written in plan mode")
			}
		})
	}
}

func TestClaudeReadyWithAKeyAndNotWithout(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t, agentbin.Newest, afterResults(modelserver.Reply{Text: "hi"}), 0)
	if info := NewClaude(r.cfg).Info(context.Background()); !info.Ready || info.Reason != "" || !info.CanAsk {
		t.Errorf("with a key: %+v", info)
	}
	cfg := r.cfg
	cfg.Env = append(slices.Clone(cfg.Env), "ANTHROPIC_API_KEY=")
	if info := NewClaude(cfg).Info(context.Background()); info.Ready || info.Reason != claudeLogin {
		t.Errorf("without a key: %+v", info)
	}
}

// Info is asked before every turn: claude's `auth status` (about half a
// second) runs once, and its answer serves the turns after it.
func TestClaudeInfoProbesOnceForManyTurns(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t, agentbin.Newest, afterResults(modelserver.Reply{Text: "hi"}), 0)
	dir := t.TempDir()
	count := filepath.Join(dir, "probes")
	wrapper := filepath.Join(dir, "claude")
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = auth ] && echo x >> %q\nexec %q \"$@\"\n", count, r.cfg.Binary)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := r.cfg
	cfg.Binary = wrapper
	c := NewClaude(cfg)
	for i := range 3 {
		if info := c.Info(context.Background()); !info.Ready {
			t.Fatalf("Info %d: %+v", i, info)
		}
	}
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "x"); n != 1 {
		t.Errorf("auth status ran %d times for 3 turns, want 1", n)
	}
}
