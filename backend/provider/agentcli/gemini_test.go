//go:build unix

package agentcli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"conch/backend/provider"
	"conch/backend/task"
)

func TestGeminiSession(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "gemini/session.jsonl")
	ch, err := NewGemini(f.config("gemini")).Stream(context.Background(), provider.Request{
		Model: "gemini-2.5-flash", Mode: task.Auto, Cwd: f.cwd, Messages: userSays("What does go.mod say?"),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, collect(t, ch), []brief{
		{Kind: provider.StepEvent, Text: "Read go.mod"},
		{Kind: provider.StepEvent, Text: "Ran go version"},
		{Kind: provider.TextDelta, Text: "The module is "},
		{Kind: provider.TextDelta, Text: "`conch`, on Go 1.26."},
		{Kind: provider.UsageEvent, Usage: provider.Usage{InputTokens: 8900, OutputTokens: 220, CacheReadTokens: 4100}},
		{Kind: provider.DoneEvent, Text: "end_turn"},
	})
	want := []string{"-p", "What does go.mod say?", "--output-format", "stream-json", "-m", "gemini-2.5-flash", "--approval-mode", "yolo"}
	if got := f.argv(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv %q, want %q", got, want)
	}
}

func TestGeminiModes(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "gemini/session.jsonl")
	ch, err := NewGemini(f.config("gemini")).Stream(context.Background(), provider.Request{Mode: task.Plan, Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, ch)
	if got := strings.Join(f.argv(), " "); !strings.HasSuffix(got, "--approval-mode plan") {
		t.Errorf("argv %q", got)
	}
	for _, m := range []task.Mode{task.Ask, task.Edits} {
		_, err := NewGemini(f.config("gemini")).Stream(context.Background(), provider.Request{Mode: m, Cwd: f.cwd, Messages: userSays("x")})
		if !errors.Is(err, ErrNeedsAsk) {
			t.Errorf("%s: %v", m, err)
		}
	}
}

func TestGeminiErrors(t *testing.T) {
	t.Parallel()
	run := func(f *fake) error {
		t.Helper()
		ch, err := NewGemini(f.config("gemini")).Stream(context.Background(), provider.Request{Mode: task.Plan, Cwd: f.cwd, Messages: userSays("x")})
		if err != nil {
			t.Fatal(err)
		}
		return lastErr(t, collect(t, ch))
	}
	var le *provider.LimitError
	if err := run(newFake(t).record("FAKE_OUTPUT", "gemini/quota.jsonl").set("FAKE_EXIT=1")); !errors.As(err, &le) ||
		le.Message != "You have exhausted your daily quota on this model." || !le.Until.IsZero() {
		t.Errorf("quota: %v", err)
	}
	auth := "Please set an Auth method in your /home/me/.gemini/settings.json or specify GEMINI_API_KEY"
	err := run(newFake(t).record("FAKE_OUTPUT", "gemini/init.jsonl").set("FAKE_EXIT=41", "FAKE_STDERR="+auth))
	if !errors.Is(err, provider.ErrAuth) || !strings.Contains(err.Error(), auth) {
		t.Errorf("auth: %v", err)
	}
	if err := run(newFake(t).record("FAKE_OUTPUT", "gemini/init.jsonl").set("FAKE_EXIT=53")); err == nil || !strings.Contains(err.Error(), "turn limit") {
		t.Errorf("turn limit: %v", err)
	}
	if err := run(newFake(t).record("FAKE_OUTPUT", "gemini/init.jsonl").set("FAKE_EXIT=1", "FAKE_STDERR=boom")); err == nil || err.Error() != "gemini exited with code 1: boom" {
		t.Errorf("exit 1: %v", err)
	}
}

func TestGeminiInfo(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	noKeys := []string{"HOME=" + home, "GEMINI_API_KEY=", "GOOGLE_API_KEY=", "GOOGLE_GENAI_USE_VERTEXAI=", "GOOGLE_GENAI_USE_GCA="}
	f := newFake(t).set(noKeys...)
	info := NewGemini(f.config("gemini")).Info(context.Background())
	if info.Ready || info.Reason != geminiNoAuth || info.CanAsk || info.Kind != "gemini" {
		t.Errorf("no auth: %+v", info)
	}
	info = NewGemini(newFake(t).set(noKeys...).set("GEMINI_API_KEY=k").config("gemini")).Info(context.Background())
	if !info.Ready {
		t.Errorf("with a key: %+v", info)
	}
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "oauth_creds.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if info := NewGemini(f.config("gemini")).Info(context.Background()); !info.Ready {
		t.Errorf("signed in: %+v", info)
	}
}
