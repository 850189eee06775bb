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
	"testing"
	"time"

	"conch/backend/internal/agentrig"
	"conch/backend/internal/modelserver"
	"conch/backend/internal/modelserver/anthropic"
	"conch/backend/provider"
	"conch/backend/task"
)

func newClaudeRig(t *testing.T, brain modelserver.Brain, retries int) *cliRig {
	t.Helper()
	r := newRig(t, "claude")
	rig, _ := agentrig.Claude(t, r.record(brain), retries)
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

// Info is asked before every turn: claude's `auth status` (about half a
// second) runs once, and its answer serves the turns after it.
func TestClaudeInfoProbesOnceForManyTurns(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t, afterResults(modelserver.Reply{Text: "hi"}), 0)
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
