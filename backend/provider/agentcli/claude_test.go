//go:build unix

package agentcli

// The fake CLI (testdata/fakecli) stands in for Claude Code only where the
// real one cannot be made to say it: a subscription's usage-limit wording,
// a line that is not JSON, a CLI that ignores SIGTERM.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/provider"
)

func TestClaudeUsageLimit(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]*provider.LimitError{
		"claude/limit-epoch.jsonl":  {Until: time.Unix(1764511200, 0), Message: "Claude AI usage limit reached"},
		"claude/limit-resets.jsonl": {Until: time.Unix(1764514800, 0), Message: "You've hit your limit · resets 3pm (Europe/London)"},
	} {
		f := newFake(t).record("FAKE_OUTPUT", name)
		ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{Cwd: f.cwd, Messages: userSays("x")})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, ch)
		err = lastErr(t, evs)
		var le *provider.LimitError
		if !errors.As(err, &le) || !errors.Is(err, provider.ErrLimit) {
			t.Fatalf("%s: %v", name, err)
		}
		if !le.Until.Equal(want.Until) || le.Message != want.Message {
			t.Errorf("%s: %+v, want %+v", name, le, want)
		}
		if len(evs) != 2 || evs[0].Kind != provider.UsageEvent {
			t.Errorf("%s: the limit text must not show as a reply: %+v", name, briefs(evs))
		}
	}
}

func TestClaudeLongLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200<<10)
	line, _ := json.Marshal(map[string]any{
		"type":    "assistant",
		"message": map[string]any{"id": "msg_big", "content": []any{map[string]any{"type": "text", "text": long}}},
	})
	f := newFake(t).recordText("FAKE_OUTPUT", string(line)+"\n"+`{"type":"result","subtype":"success","is_error":false,"usage":{"input_tokens":1,"output_tokens":2}}`+"\n")
	ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, ch)
	if len(evs) != 3 || evs[0].Text != long || evs[2].Kind != provider.DoneEvent {
		t.Errorf("got %d events, first %d bytes", len(evs), len(evs[0].Text))
	}
}

func TestClaudeMalformedLine(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "claude/malformed.jsonl")
	ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, ch)
	if err := lastErr(t, evs); !errors.Is(err, provider.ErrProtocol) || len(evs) != 1 {
		t.Errorf("events %+v", briefs(evs))
	}
}

func TestClaudeExitWithoutResult(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "claude/init.jsonl").
		set("FAKE_EXIT=3", "FAKE_STDERR=Error: connect ECONNREFUSED api.anthropic.com")
	ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	err = lastErr(t, collect(t, ch))
	if got, want := err.Error(), "claude exited with code 3: Error: connect ECONNREFUSED api.anthropic.com"; got != want {
		t.Errorf("err %q, want %q", got, want)
	}
}

func TestClaudeIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "claude/init.jsonl").set("FAKE_SLEEP=30", "FAKE_IGNORE_TERM=1")
	cfg := f.config("claude")
	cfg.Grace = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := NewClaude(cfg).Stream(ctx, provider.Request{Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(f.dir, "child")); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal("the fake did not start its child")
		}
	}
	start := time.Now()
	cancel()
	evs := collect(t, ch)
	took := time.Since(start)
	if took < cfg.Grace || took > cfg.Grace+time.Second {
		t.Errorf("stream ended %v after cancel; grace %v", took, cfg.Grace)
	}
	if err := lastErr(t, evs); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

func TestAnEditOrAWriteSaysWhatItChanges(t *testing.T) {
	dir := "/w"
	a := claudeAction("Write", json.RawMessage(`{"file_path":"/w/a.txt","content":"all of it\n"}`), dir)
	if a.Write == nil || *a.Write != (provider.Write{Path: "a.txt", New: "all of it\n", Whole: true}) {
		t.Fatalf("Write: %+v", a.Write)
	}
	a = claudeAction("Edit", json.RawMessage(`{"file_path":"/w/a.txt","old_string":"it","new_string":"that"}`), dir)
	if a.Write == nil || *a.Write != (provider.Write{Path: "a.txt", Old: "it", New: "that"}) {
		t.Fatalf("Edit: %+v", a.Write)
	}
	a = claudeAction("MultiEdit", json.RawMessage(`{"file_path":"/w/a.txt","edits":[{"old_string":"one","new_string":"1"},{"old_string":"two","new_string":"2"}]}`), dir)
	if a.Write == nil || a.Write.Old != "one\n…\ntwo" || a.Write.New != "1\n…\n2" {
		t.Fatalf("MultiEdit: %+v", a.Write)
	}
	for _, raw := range []string{`{"file_path":"/w/a.ipynb","new_source":"x"}`, `not json`} {
		if a := claudeAction("NotebookEdit", json.RawMessage(raw), dir); a.Write != nil {
			t.Errorf("NotebookEdit %s: %+v", raw, a.Write)
		}
	}
}
