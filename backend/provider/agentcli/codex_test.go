//go:build unix

package agentcli

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"conch/backend/provider"
	"conch/backend/task"
)

func TestCodexSession(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "codex/session.jsonl")
	cfg := f.config("codex")
	cfg.Model = "gpt-5-codex"
	ch, err := NewCodex(cfg).Stream(context.Background(), provider.Request{Mode: task.Plan, Cwd: f.cwd, Messages: userSays("Fix the test")})
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, collect(t, ch), []brief{
		{Kind: provider.StepEvent, Text: "Ran go test ./..."},
		{Kind: provider.StepEvent, Text: "Edited main.go, docs/notes.md"},
		{Kind: provider.StepEvent, Text: "Searched the web for go 1.26 release notes"},
		{Kind: provider.TextDelta, Text: "Fixed the failing test."},
		{Kind: provider.TextDelta, Text: "\n\nBoth files are updated."},
		{Kind: provider.UsageEvent, Usage: provider.Usage{InputTokens: 24763, OutputTokens: 122, CacheReadTokens: 24448}},
		{Kind: provider.DoneEvent, Text: "end_turn"},
	})
	want := []string{"exec", "--json", "-m", "gpt-5-codex", "-C", f.cwd, "--skip-git-repo-check", "-s", "read-only", "Fix the test"}
	if got := f.argv(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv %q, want %q", got, want)
	}
}

func TestCodexModes(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "codex/recovered.jsonl")
	ch, err := NewCodex(f.config("codex")).Stream(context.Background(), provider.Request{Mode: task.Auto, Cwd: f.cwd, Messages: userSays("go")})
	if err != nil {
		t.Fatal(err)
	}
	// An error codex recovers from does not end the turn.
	wantEvents(t, collect(t, ch), []brief{
		{Kind: provider.TextDelta, Text: "Done."},
		{Kind: provider.UsageEvent, Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}},
		{Kind: provider.DoneEvent, Text: "end_turn"},
	})
	if got := strings.Join(f.argv(), " "); !strings.HasSuffix(got, "--skip-git-repo-check -s workspace-write go") {
		t.Errorf("argv %q", got)
	}
	for _, m := range []task.Mode{task.Ask, task.Edits} {
		_, err := NewCodex(f.config("codex")).Stream(context.Background(), provider.Request{Mode: m, Cwd: f.cwd, Messages: userSays("go")})
		if !errors.Is(err, ErrNeedsAsk) || !strings.Contains(err.Error(), "runs only in plan or auto mode") {
			t.Errorf("%s: %v", m, err)
		}
	}
}

func TestCodexLongPromptGoesOnStdin(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "codex/recovered.jsonl")
	long := strings.Repeat("y", argMax+1)
	ch, err := NewCodex(f.config("codex")).Stream(context.Background(), provider.Request{Mode: task.Plan, Cwd: f.cwd, Messages: userSays(long)})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, ch)
	if argv := f.argv(); argv[len(argv)-1] != "-" || f.read("stdin") != long {
		t.Errorf("argv ends %q", argv[len(argv)-1])
	}
}

func TestCodexLimits(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "codex/limit.jsonl").set("FAKE_EXIT=1")
	ch, err := NewCodex(f.config("codex")).Stream(context.Background(), provider.Request{Mode: task.Plan, Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	var le *provider.LimitError
	if err := lastErr(t, collect(t, ch)); !errors.As(err, &le) {
		t.Fatalf("err %v", err)
	}
	u := le.Until.In(time.Local)
	if u.Hour() != 15 || u.Minute() != 15 || !u.After(time.Now()) || u.Sub(time.Now()) > 24*time.Hour {
		t.Errorf("until %v", le.Until)
	}
	if !strings.HasPrefix(le.Message, "You've hit your usage limit.") {
		t.Errorf("message %q", le.Message)
	}

	f = newFake(t).record("FAKE_OUTPUT", "codex/quota.jsonl").set("FAKE_EXIT=1")
	ch, err = NewCodex(f.config("codex")).Stream(context.Background(), provider.Request{Mode: task.Plan, Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := lastErr(t, collect(t, ch)); !errors.As(err, &le) || !le.Until.IsZero() || le.Message != "Quota exceeded. Check your plan and billing details." {
		t.Errorf("err %v", err)
	}
}

func TestCodexInfo(t *testing.T) {
	t.Parallel()
	f := newFake(t).set("FAKE_PROBE_EXIT=1", "FAKE_PROBE_OUT=Not logged in")
	info := NewCodex(f.config("codex")).Info(context.Background())
	if info.Ready || info.Reason != "Not logged in" || info.CanAsk || info.Kind != "codex" {
		t.Errorf("logged out: %+v", info)
	}
	if got := strings.Join(f.argv(), " "); got != "login status" {
		t.Errorf("probe argv %q", got)
	}
	info = NewCodex(newFake(t).set("FAKE_PROBE_OUT=Logged in using ChatGPT").config("codex")).Info(context.Background())
	if !info.Ready {
		t.Errorf("logged in: %+v", info)
	}
}
