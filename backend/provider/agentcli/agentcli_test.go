//go:build unix

package agentcli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/provider"
)

// fake is one run of testdata/fakecli: its folder for argv and stdin,
// the chat's folder, and the environment that drives it.
type fake struct {
	t   *testing.T
	dir string // FAKE_DIR
	cwd string // the request's folder
	env []string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{t: t, dir: t.TempDir(), cwd: t.TempDir()}
	f.env = []string{"FAKE_DIR=" + f.dir}
	return f
}

// set adds KEY=VALUE pairs to the fake's environment.
func (f *fake) set(kv ...string) *fake {
	f.env = append(f.env, kv...)
	return f
}

// record points key at a recording from testdata with {{CWD}} replaced.
func (f *fake) record(key, name string) *fake {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.t.Fatal(err)
	}
	return f.recordText(key, strings.ReplaceAll(string(b), "{{CWD}}", f.cwd))
}

// recordText points key at a file holding text.
func (f *fake) recordText(key, text string) *fake {
	f.t.Helper()
	path := filepath.Join(f.dir, strings.ToLower(key)+".jsonl")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return f.set(key + "=" + path)
}

// config runs the fake as the named CLI.
func (f *fake) config(name string) Config {
	bin, err := filepath.Abs(filepath.Join("testdata", "bin", name))
	if err != nil {
		f.t.Fatal(err)
	}
	return Config{ID: name + "-1", Binary: bin, Env: f.env, Grace: 2 * time.Second}
}

// collect reads a stream to its end, failing after 10 s.
func collect(t *testing.T, ch <-chan provider.Event) []provider.Event {
	t.Helper()
	var evs []provider.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("stream did not end; so far %+v", evs)
		}
	}
}

// lastErr checks that the stream ended with an error and returns it.
func lastErr(t *testing.T, evs []provider.Event) error {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	last := evs[len(evs)-1]
	if last.Kind != provider.ErrorEvent || last.Err == nil {
		t.Fatalf("last event = %+v, want an error", last)
	}
	return last.Err
}

// brief renders events for comparing whole sequences.
type brief struct {
	Kind  provider.EventKind
	Text  string
	Usage provider.Usage
}

func briefs(evs []provider.Event) []brief {
	out := make([]brief, 0, len(evs))
	for _, ev := range evs {
		b := brief{Kind: ev.Kind, Text: ev.Text}
		switch ev.Kind {
		case provider.UsageEvent:
			b.Usage = *ev.Usage
		case provider.DoneEvent:
			b.Text = ev.StopReason
		case provider.ErrorEvent:
			b.Text = ev.Err.Error()
		}
		out = append(out, b)
	}
	return out
}

func userSays(text string) []provider.Message {
	return []provider.Message{{Role: provider.User, Text: text}}
}

func TestPromptSendsEarlierTurnsAsContext(t *testing.T) {
	t.Parallel()
	if got := prompt(provider.Request{Messages: userSays("hi")}); got != "hi" {
		t.Errorf("one message: %q", got)
	}
	got := prompt(provider.Request{
		System: "Be brief.",
		Messages: []provider.Message{
			{Role: provider.User, Text: "What is in go.mod?"},
			{Role: provider.Assistant, Text: "Module conch."},
			{Role: provider.User, Text: "And the Go version?"},
		},
	})
	want := "Be brief.\n\nEarlier in this conversation:\n\nUser: What is in go.mod?\n\nAssistant: Module conch.\n\nThe user now says:\n\nAnd the Go version?"
	if got != want {
		t.Errorf("prompt:\n got %q\nwant %q", got, want)
	}
}

func TestLimitTimes(t *testing.T) {
	fixed := time.Date(2026, 11, 30, 10, 0, 0, 0, time.Local)
	now = func() time.Time { return fixed }
	t.Cleanup(func() { now = time.Now })

	if got, want := codexUntil("try again at 3:15 PM."), time.Date(2026, 11, 30, 15, 15, 0, 0, time.Local); !got.Equal(want) {
		t.Errorf("later today: %v, want %v", got, want)
	}
	if got, want := codexUntil("Try again at 9:05 AM."), time.Date(2026, 12, 1, 9, 5, 0, 0, time.Local); !got.Equal(want) {
		t.Errorf("tomorrow: %v, want %v", got, want)
	}
	if got, want := codexUntil("or try again at Dec 2nd, 2026 1:00 AM."), time.Date(2026, 12, 2, 1, 0, 0, 0, time.Local); !got.Equal(want) {
		t.Errorf("with a date: %v, want %v", got, want)
	}
	if got := codexUntil("Quota exceeded."); !got.IsZero() {
		t.Errorf("no time: %v", got)
	}
	if got := claudeEpoch("Claude AI usage limit reached|1764511200"); got.Unix() != 1764511200 {
		t.Errorf("epoch: %v", got)
	}
	if got, want := claudeResets("You've hit your limit · resets 3pm (UTC)"), time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("resets: %v, want %v", got, want)
	}
}

func TestRelPathAndShellUnwrap(t *testing.T) {
	t.Parallel()
	if got := relPath("/p", "/p/a/b.go"); got != "a/b.go" {
		t.Errorf("inside: %q", got)
	}
	if got := relPath("/p", "/q/b.go"); got != "/q/b.go" {
		t.Errorf("outside: %q", got)
	}
	if got := unwrapShell("bash -lc 'go test ./...'"); got != "go test ./..." {
		t.Errorf("unwrap: %q", got)
	}
}

func TestMissingBinaryIsNotReady(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	cfg := Config{Env: []string{"PATH=" + empty}}
	for _, p := range []provider.Provider{NewClaude(cfg), NewCodex(cfg), NewGemini(cfg)} {
		info := p.Info(context.Background())
		if info.Ready || !strings.Contains(info.Reason, "was not found on PATH; install") {
			t.Errorf("%s: %+v", info.Kind, info)
		}
		if info.Category != provider.CodingAgent || info.Models.Default == "" || info.Models.Fast == "" {
			t.Errorf("%s: %+v", info.Kind, info)
		}
		_, err := p.Stream(context.Background(), provider.Request{Messages: userSays("hi"), Mode: "plan"})
		if !errors.Is(err, provider.ErrNotReady) {
			t.Errorf("%s stream: %v", info.Kind, err)
		}
	}
	if got := NewClaude(cfg).Info(context.Background()).Reason; got != "claude was not found on PATH; install Claude Code" {
		t.Errorf("reason %q", got)
	}
}

func TestClaudeResultErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		result   claudeResult
		apiError string
		is       error
		text     string
	}{
		{claudeResult{Subtype: "success", IsError: true, Result: "5-hour limit reached ∙ resets 2am"}, "", provider.ErrLimit, "5-hour limit reached ∙ resets 2am"},
		{claudeResult{Subtype: "success", IsError: true, Result: "Credit balance is too low"}, "billing_error", provider.ErrLimit, "Credit balance is too low"},
		{claudeResult{Subtype: "success", IsError: true, Result: "Invalid API key · Please run /login"}, "", provider.ErrAuth, "Invalid API key · Please run /login"},
		{claudeResult{Subtype: "success", IsError: true, Result: `API Error: 529 {"type":"overloaded_error"}`, APIErrorStatus: 529.0}, "", provider.ErrOverload, "overloaded"},
		{claudeResult{Subtype: "error_max_turns", IsError: true}, "", nil, "claude stopped: it reached its turn limit"},
		{claudeResult{Subtype: "error_during_execution", IsError: true, Errors: []any{"tool crashed"}}, "", nil, "claude: tool crashed"},
	} {
		h := &claudeHandler{apiError: c.apiError}
		err := h.resultError(&c.result)
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%+v: %v, want %v", c.result, err, c.is)
		}
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("%+v: %q does not say %q", c.result, err, c.text)
		}
	}
}

func TestSteps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{claudeStep("Grep", []byte(`{"pattern":"TODO"}`), "/p"), "Searched for TODO"},
		{claudeStep("Edit", []byte(`{"file_path":"/p/main.go"}`), "/p"), "Edited main.go"},
		{claudeStep("WebSearch", []byte(`{"query":"bbolt"}`), "/p"), "Searched the web for bbolt"},
		{claudeStep("mcp__gh__issue", []byte(`{}`), "/p"), "Used mcp__gh__issue"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	if a := claudeAction("Edit", []byte(`{"file_path":"/p/src/a.go"}`), "/p"); a.Effect != "edit" || a.Detail != "Edit src/a.go?" {
		t.Errorf("action %+v", a)
	}
}

func TestReasonsLoseTheirEscapeCodes(t *testing.T) {
	in := "\x1b[33mWarning:\x1b[0m folder is not trusted\r\n\x1b]8;;http://x\x07link\x1b]8;;\x07 more"
	if got := firstLine(in, "x"); got != "Warning: folder is not trusted" {
		t.Fatalf("firstLine = %q", got)
	}
	if got := plain("\x1b[1;31mred\x1b[m"); got != "red" {
		t.Fatalf("plain = %q", got)
	}
}
