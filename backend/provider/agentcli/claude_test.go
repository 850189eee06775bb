//go:build unix

package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conch/backend/provider"
	"conch/backend/task"
)

func TestClaudeSession(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "claude/session.jsonl")
	cfg := f.config("claude")
	cfg.Model = "haiku"
	ch, err := NewClaude(cfg).Stream(context.Background(), provider.Request{
		Model:    "opus",
		Mode:     task.Edits,
		Cwd:      f.cwd,
		Messages: userSays("Run the tests"),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, collect(t, ch), []brief{
		{Kind: provider.TextDelta, Text: "Let me look at "},
		{Kind: provider.TextDelta, Text: "the module first."},
		{Kind: provider.StepEvent, Text: "Read go.mod"},
		{Kind: provider.StepEvent, Text: "Ran go test ./..."},
		{Kind: provider.TextDelta, Text: "\n\nAll tests pass."},
		{Kind: provider.UsageEvent, Usage: provider.Usage{InputTokens: 1200, OutputTokens: 250, CacheReadTokens: 4000, CacheWriteTokens: 300, CostUSD: 0.0123}},
		{Kind: provider.DoneEvent, Text: "success"},
	})
	want := []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose", "--model", "opus", "--permission-mode", "acceptEdits"}
	if got := f.argv(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv %q, want %q", got, want)
	}
	var turn struct {
		Type    string `json:"type"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(f.read("stdin")), &turn); err != nil {
		t.Fatal(err)
	}
	if turn.Type != "user" || turn.Message.Role != "user" || turn.Message.Content != "Run the tests" {
		t.Errorf("stdin %+v", turn)
	}
}

func TestClaudeModes(t *testing.T) {
	t.Parallel()
	for m, want := range map[task.Mode]string{task.Plan: "plan", task.Ask: "default", task.Edits: "acceptEdits", task.Auto: "bypassPermissions"} {
		f := newFake(t).record("FAKE_OUTPUT", "claude/allowed.jsonl")
		ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{Mode: m, Cwd: f.cwd, Messages: userSays("x")})
		if err != nil {
			t.Fatal(err)
		}
		collect(t, ch)
		argv := strings.Join(f.argv(), " ")
		if !strings.HasSuffix(argv, "--permission-mode "+want) || strings.Contains(argv, "--model") {
			t.Errorf("%s: argv %q", m, argv)
		}
	}
}

// askingClaude runs the fake that asks, over MCP, to run `npm test`, and
// answers with allow or askErr.
func askingClaude(t *testing.T, allow bool, askErr error) (*fake, []provider.Event, []string) {
	t.Helper()
	f := newFake(t).
		record("FAKE_OUTPUT", "claude/init.jsonl").
		record("FAKE_ASK", "claude/ask.json").
		record("FAKE_ALLOW", "claude/allowed.jsonl").
		record("FAKE_DENY", "claude/denied.jsonl")
	var mu sync.Mutex
	var asked []string
	ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{
		Mode:     task.Ask,
		Cwd:      f.cwd,
		Messages: userSays("Run the tests"),
		Ask: func(ctx context.Context, a provider.Action) (bool, error) {
			mu.Lock()
			asked = append(asked, a.Tool, a.Detail)
			mu.Unlock()
			return allow, askErr
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, ch)
	mu.Lock()
	defer mu.Unlock()
	return f, evs, asked
}

// mcpConfig checks the argv names Conch's MCP prompt tool and returns the
// config file it gave; by the time the run has ended, that file is gone.
func mcpConfig(t *testing.T, f *fake) string {
	t.Helper()
	argv := f.argv()
	n := len(argv)
	if n < 4 || argv[n-4] != "--mcp-config" || argv[n-2] != "--permission-prompt-tool" || argv[n-1] != "mcp__conch__approve" {
		t.Fatalf("argv %q", argv)
	}
	if _, err := os.Stat(argv[n-3]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the mcp config outlived the run: %v", err)
	}
	return argv[n-3]
}

func TestClaudeAskAllowed(t *testing.T) {
	t.Parallel()
	f, evs, asked := askingClaude(t, true, nil)
	if want := []string{"Bash", "Run `npm test` in " + tilde(f.cwd) + "?"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("asked %q, want %q", asked, want)
	}
	mcpConfig(t, f)
	if got, want := strings.TrimSpace(f.read("answer")), `{"behavior":"allow","updatedInput":{"command":"npm test","description":"Run the tests"}}`; got != want {
		t.Errorf("answer %s, want %s", got, want)
	}
	wantEvents(t, evs, []brief{
		{Kind: provider.StepEvent, Text: "Ran npm test"},
		{Kind: provider.TextDelta, Text: "The tests pass."},
		{Kind: provider.UsageEvent, Usage: provider.Usage{InputTokens: 40, OutputTokens: 24, CostUSD: 0.004}},
		{Kind: provider.DoneEvent, Text: "success"},
	})
}

func TestClaudeAskDenied(t *testing.T) {
	t.Parallel()
	for askErr, want := range map[error]string{
		nil:                             `{"behavior":"deny","message":"The person declined."}`,
		errors.New("the ask timed out"): `{"behavior":"deny","message":"Conch could not ask the person: the ask timed out"}`,
	} {
		f, evs, asked := askingClaude(t, false, askErr)
		if len(asked) != 2 {
			t.Errorf("asked %q", asked)
		}
		mcpConfig(t, f)
		if got := strings.TrimSpace(f.read("answer")); got != want {
			t.Errorf("answer %s, want %s", got, want)
		}
		wantEvents(t, evs, []brief{
			{Kind: provider.TextDelta, Text: "I was not allowed to run the tests."},
			{Kind: provider.UsageEvent, Usage: provider.Usage{InputTokens: 38, OutputTokens: 9, CostUSD: 0.003}},
			{Kind: provider.DoneEvent, Text: "success"},
		})
	}
}

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

func TestClaudeNotLoggedIn(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "claude/login.jsonl")
	ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	err = lastErr(t, collect(t, ch))
	if !errors.Is(err, provider.ErrAuth) || !strings.Contains(err.Error(), "Not logged in · Please run /login") {
		t.Errorf("err %v", err)
	}
}

func TestClaudeInfo(t *testing.T) {
	t.Parallel()
	f := newFake(t).set("FAKE_PROBE_EXIT=1", "FAKE_PROBE_OUT=Not logged in · Please run /login")
	info := NewClaude(f.config("claude")).Info(context.Background())
	if info.Ready || info.Reason != "Not logged in · Please run /login" || !info.CanAsk || info.Kind != "claude-code" {
		t.Errorf("logged out: %+v", info)
	}
	if got := strings.Join(f.argv(), " "); got != "auth status" {
		t.Errorf("probe argv %q", got)
	}
	f = newFake(t)
	cfg := f.config("claude")
	cfg.Model = "claude-opus-4-1"
	info = NewClaude(cfg).Info(context.Background())
	if !info.Ready || info.Reason != "" || info.Models.Default != "claude-opus-4-1" || info.Models.Fast != "haiku" {
		t.Errorf("logged in: %+v", info)
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

// A line that starts with '{' but is not JSON ends the stream with
// ErrProtocol; a line that does not start with '{' is skipped (the session
// recording has one).
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

func TestClaudeCancelStopsTheGroup(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "claude/init.jsonl").set("FAKE_SLEEP=30")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := NewClaude(f.config("claude")).Stream(ctx, provider.Request{Cwd: f.cwd, Messages: userSays("x")})
	if err != nil {
		t.Fatal(err)
	}
	childFile := filepath.Join(f.dir, "child")
	deadline := time.Now().Add(5 * time.Second)
	var child int
	for child == 0 {
		if b, err := os.ReadFile(childFile); err == nil && strings.HasSuffix(string(b), "\n") {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		} else if time.Now().After(deadline) {
			t.Fatal("the fake did not start its child")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := time.Now()
	cancel()
	evs := collect(t, ch)
	if took := time.Since(start); took > time.Second {
		t.Errorf("stream ended %v after cancel", took)
	}
	if err := lastErr(t, evs); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	// The child was in the group: it is gone too (reaped by init soon).
	for deadline := time.Now().Add(time.Second); alive(child); {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still runs", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs; a zombie waiting for a reaper that
// never comes (PID 1 in some containers) has stopped.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
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

func TestClaudePlanModeRoutesNoAsks(t *testing.T) {
	t.Parallel()
	f := newFake(t).record("FAKE_OUTPUT", "claude/allowed.jsonl")
	ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{
		Mode: task.Plan, Cwd: f.cwd, Messages: userSays("x"),
		Ask: func(context.Context, provider.Action) (bool, error) { return true, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, ch)
	if argv := strings.Join(f.argv(), " "); strings.Contains(argv, "--permission-prompt-tool") {
		t.Errorf("argv %q", argv)
	}
}

// Claude cancels a question with notifications/cancelled: the ask's
// context ends and no answer is given.
func TestClaudeCancelledAsk(t *testing.T) {
	t.Parallel()
	f := newFake(t).
		record("FAKE_OUTPUT", "claude/init.jsonl").
		record("FAKE_ASK", "claude/cancelled.json").
		record("FAKE_ALLOW", "claude/allowed.jsonl").
		record("FAKE_DENY", "claude/denied.jsonl").
		set("FAKE_MCP_CANCEL=1")
	asked := make(chan string, 1)
	ended := make(chan error, 1)
	ch, err := NewClaude(f.config("claude")).Stream(context.Background(), provider.Request{
		Mode: task.Edits, Cwd: f.cwd, Messages: userSays("x"),
		Ask: func(ctx context.Context, a provider.Action) (bool, error) {
			asked <- a.Tool + ": " + a.Detail
			if err := os.WriteFile(filepath.Join(f.dir, "asked"), nil, 0o644); err != nil {
				t.Error(err)
			}
			<-ctx.Done()
			ended <- ctx.Err()
			return true, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, ch)
	if got := <-asked; got != "Write: Write src/a.go?" {
		t.Errorf("asked %q", got)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ask ended with %v", err)
		}
	case <-time.After(time.Second):
		t.Error("the ask was not cancelled")
	}
	if answer := f.read("answer"); strings.TrimSpace(answer) != "" {
		t.Errorf("answered a cancelled ask: %s", answer)
	}
	wantEvents(t, evs, []brief{
		{Kind: provider.TextDelta, Text: "I was not allowed to run the tests."},
		{Kind: provider.UsageEvent, Usage: provider.Usage{InputTokens: 38, OutputTokens: 9, CostUSD: 0.003}},
		{Kind: provider.DoneEvent, Text: "success"},
	})
}

// Cancelling a run whose question waits stops the question server: the
// ask ends, the port is closed, the config file is removed and no
// goroutine of the server is left. Not parallel, so that the goroutines
// counted are this test's.
func TestClaudeCancelStopsTheAskServer(t *testing.T) {
	f := newFake(t).
		record("FAKE_OUTPUT", "claude/init.jsonl").
		record("FAKE_ASK", "claude/ask.json").
		record("FAKE_ALLOW", "claude/allowed.jsonl").
		record("FAKE_DENY", "claude/denied.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asked := make(chan struct{})
	ended := make(chan error, 1)
	ch, err := NewClaude(f.config("claude")).Stream(ctx, provider.Request{
		Mode: task.Ask, Cwd: f.cwd, Messages: userSays("Run the tests"),
		Ask: func(ctx context.Context, a provider.Action) (bool, error) {
			close(asked)
			<-ctx.Done()
			ended <- ctx.Err()
			return true, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the fake never asked")
	}
	// The config names the server; read it while it still exists.
	argv := f.argv()
	b, err := os.ReadFile(argv[len(argv)-3])
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers struct {
			Conch struct{ URL string } `json:"conch"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if !stillServes(cfg.MCPServers.Conch.URL) {
		t.Fatal("the server does not answer while the run goes on")
	}
	if len(serverGoroutines()) == 0 {
		t.Fatal("no server goroutines seen while it runs: the check below would prove nothing")
	}

	cancel()
	evs := collect(t, ch)
	if err := lastErr(t, evs); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ask ended with %v", err)
		}
	default:
		t.Error("the stream ended before the ask did")
	}
	mcpConfig(t, f)
	if stillServes(cfg.MCPServers.Conch.URL) {
		t.Errorf("%s still serves", cfg.MCPServers.Conch.URL)
	}
	if left := serverGoroutines(); len(left) > 0 {
		t.Errorf("goroutines left:\n%s", strings.Join(left, "\n\n"))
	}
}
