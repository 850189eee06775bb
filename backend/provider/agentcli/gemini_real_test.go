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
	"conch/backend/testrig/modelserver/gemini"
)

func newGeminiRig(t *testing.T, in agentbin.Install, brain modelserver.Brain, attempts int) *cliRig {
	t.Helper()
	r := newRig(t, "gemini")
	rig, _ := agentrig.GeminiAt(t, in, r.record(brain), attempts)
	r.cfg = Config{ID: "gemini-1", Binary: rig.Bin, Env: rig.Env, Model: "gemini-2.5-flash"}
	return r
}

// In auto the gate answers at once; the file is written in a folder the
// CLI was never told to trust; the step shows once it has run; the
// messages of the reply do not run together.
func TestGeminiInAutoWritesAFile(t *testing.T) {
	t.Parallel()
	r := newGeminiRig(t, agentbin.Newest, afterResults(
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
			r := newGeminiRig(t, agentbin.Newest, func(modelserver.Turn) modelserver.Reply { return c.reply }, 1)
			err := lastErr(t, collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: (&asks{}).ask})))
			if !errors.Is(err, provider.ErrLimit) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want a limit saying %q", err, c.want)
			}
		})
	}
}

// Gemini CLI says nothing over ACP while it retries; Conch reads its
// stderr and shows each retry.
func TestGeminiRetriesShow(t *testing.T) {
	t.Parallel()
	for _, in := range agentbin.Installs {
		t.Run(string(in), func(t *testing.T) {
			t.Parallel()
			r := newGeminiRig(t, in, func(modelserver.Turn) modelserver.Reply { return gemini.PerMinuteLimit("gemini-2.5-flash", "1s") }, 2)
			evs := collectFor(t, time.Minute, r.stream(t, context.Background(), provider.Request{Mode: task.Auto, Ask: (&asks{}).ask}))
			if err := lastErr(t, evs); !errors.Is(err, provider.ErrLimit) {
				t.Errorf("error %v, want a limit", err)
			}
			if _, _, notices := texts(evs); !slices.Equal(notices, []string{"Gemini CLI is retrying after a rate limit (1 of 1)"}) {
				t.Errorf("notices %q", notices)
			}
		})
	}
}
