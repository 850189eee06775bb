package openai

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"conch/backend/provider"
	"conch/backend/provider/internal/wiretest"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/chatcompletions"
)

var update = flag.Bool("update", false, "rewrite golden files")

func data(s string) string { return "data: " + s + "\n\n" }

func newServer(t *testing.T, h http.Handler) *Provider {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return New(Config{ID: "test", Name: "OpenAI", BaseURL: srv.URL + "/v1", APIKey: "sk-test", DefaultModel: "gpt-test"})
}

func text(evs []provider.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == provider.TextDelta {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

const (
	roleChunk  = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`
	stopChunk  = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`
	usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":4}}}`
)

func textChunk(s string) string {
	b, _ := json.Marshal(s)
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}],"usage":null}`
}

func TestStreamsTextInManyChunks(t *testing.T) {
	chunks := []string{": OPENROUTER PROCESSING\n\n", data(roleChunk)}
	want := "Hello! How can I help you today? Ünïcode too."
	for _, piece := range strings.SplitAfter(want, " ") {
		chunks = append(chunks, data(textChunk(piece)), ": keep-alive\n\n")
	}
	chunks = append(chunks, data(stopChunk), data(usageChunk), "data: [DONE]\n\n")
	p := newServer(t, wiretest.SSE(chunks...))
	evs := wiretest.Stream(t, p, wiretest.Hello())

	if got := text(evs); got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	deltas := 0
	for _, ev := range evs {
		if ev.Kind == provider.TextDelta {
			deltas++
		}
	}
	if deltas != len(strings.SplitAfter(want, " ")) {
		t.Fatalf("%d text deltas: text should stream as it arrives", deltas)
	}
	usage := evs[len(evs)-2]
	if usage.Kind != provider.UsageEvent || *usage.Usage != (provider.Usage{InputTokens: 15, OutputTokens: 10, CacheReadTokens: 4}) {
		t.Fatalf("usage event %+v", usage)
	}
	if done := evs[len(evs)-1]; done.Kind != provider.DoneEvent || done.StopReason != "stop" {
		t.Fatalf("last event %+v", done)
	}
}

func TestReassemblesParallelToolCalls(t *testing.T) {
	// Two calls whose argument pieces interleave, as OpenAI streams them.
	p := newServer(t, wiretest.SSE(
		data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}`),
		data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}`),
		data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"list_files","arguments":""}}]},"finish_reason":null}]}`),
		data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"go"}}]},"finish_reason":null}]}`),
		data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"dir\":"}}]},"finish_reason":null}]}`),
		data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":".mod\"}"}}]},"finish_reason":null}]}`),
		data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":" \"./backend\", \"deep\": true}"}}]},"finish_reason":null}]}`),
		data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
		data(`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":80,"completion_tokens":40,"total_tokens":120}}`),
		"data: [DONE]\n\n",
	))
	evs := wiretest.Stream(t, p, wiretest.Hello())
	var calls []provider.ToolCall
	for _, ev := range evs {
		if ev.Kind == provider.ToolCallEvent {
			calls = append(calls, *ev.Call)
		}
	}
	want := []provider.ToolCall{
		{ID: "call_A", Name: "read_file", Arguments: json.RawMessage(`{"path": "go.mod"}`)},
		{ID: "call_B", Name: "list_files", Arguments: json.RawMessage(`{"dir": "./backend", "deep": true}`)},
	}
	if len(calls) != len(want) {
		t.Fatalf("calls %+v", calls)
	}
	for i := range want {
		if calls[i].ID != want[i].ID || calls[i].Name != want[i].Name || string(calls[i].Arguments) != string(want[i].Arguments) {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, calls[i].ID, calls[i].Name, calls[i].Arguments, want[i].ID, want[i].Name, want[i].Arguments)
		}
	}
	if done := evs[len(evs)-1]; done.Kind != provider.DoneEvent || done.StopReason != "tool_calls" {
		t.Fatalf("last event %+v", done)
	}
	if u := evs[len(evs)-2]; u.Kind != provider.UsageEvent || u.Usage.InputTokens != 80 || u.Usage.OutputTokens != 40 {
		t.Fatalf("usage %+v", u)
	}
}

func TestOllamaWholeToolCallInOneChunk(t *testing.T) {
	// Ollama sends each call whole, and finishes with "stop".
	p := newServer(t, wiretest.SSE(
		data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"llama3.2","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","index":0,"type":"function","function":{"name":"list_files","arguments":"{}"}}]},"finish_reason":null}]}`),
		data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"llama3.2","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`),
		"data: [DONE]\n\n",
	))
	evs := wiretest.Stream(t, p, wiretest.Hello())
	if len(evs) != 2 || evs[0].Kind != provider.ToolCallEvent || evs[0].Call.Name != "list_files" || string(evs[0].Call.Arguments) != "{}" {
		t.Fatalf("events %+v", evs)
	}
}

func TestWholeReplyWhenServerDoesNotStream(t *testing.T) {
	p := newServer(t, wiretest.Status(200, `{"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Looking.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"go.mod\"}"}},{"type":"function","function":{"name":"list_files","arguments":{}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`))
	evs := wiretest.Stream(t, p, wiretest.Hello())
	if len(evs) != 5 || evs[0].Text != "Looking." ||
		evs[1].Call.ID != "call_1" || string(evs[1].Call.Arguments) != `{"path":"go.mod"}` ||
		evs[2].Call.ID != "conch_call_1" || evs[2].Call.Name != "list_files" || string(evs[2].Call.Arguments) != `{}` ||
		evs[3].Usage.InputTokens != 12 || evs[4].Kind != provider.DoneEvent || evs[4].StopReason != "tool_calls" {
		for _, e := range evs {
			t.Logf("%+v", e)
		}
		t.Fatal("unexpected events")
	}
}

func TestReadsA100KiBLine(t *testing.T) {
	big := strings.Repeat("abcdefgh", 100<<10/8)
	p := newServer(t, wiretest.SSE(data(textChunk(big)), data(stopChunk), "data: [DONE]\n\n"))
	evs := wiretest.Stream(t, p, wiretest.Hello())
	if got := text(evs); got != big {
		t.Fatalf("got %d bytes of text, want %d", len(got), len(big))
	}
}

func TestRequestBodyGolden(t *testing.T) {
	srv := chatcompletions.New(t, func(modelserver.Turn) modelserver.Reply { return modelserver.Reply{} })
	cfg := OpenRouter("sk-or-test")
	cfg.BaseURL = srv.URL + "/api/v1"
	p := New(cfg)
	req := provider.Request{
		Model:  "meta/llama-test",
		System: "You are Conch.",
		Messages: []provider.Message{
			{Role: provider.User, Text: "What is in go.mod?"},
			{Role: provider.Assistant, Text: "Let me look.", ToolCalls: []provider.ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"go.mod"}`)},
				{ID: "call_2", Name: "list_files"},
			}},
			{Role: provider.ToolRole, ToolCallID: "call_1", Text: "module conch"},
			{Role: provider.ToolRole, ToolCallID: "call_2", Text: "no such folder", IsError: true},
			{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: "call_3", Name: "list_files", Arguments: json.RawMessage(`{}`)}}},
			{Role: provider.ToolRole, ToolCallID: "call_3", Text: "go.mod\nmain.go"},
			{Role: provider.Assistant, Text: "It declares module conch."},
			{Role: provider.User, Text: "Thanks"},
		},
		Tools: []provider.ToolSpec{
			{Name: "read_file", Description: "Read a file in the chat's folder.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list_files", Description: "List files."},
		},
	}
	wiretest.Stream(t, p, req)
	sent := srv.Requests()
	if len(sent) != 1 {
		t.Fatalf("%d requests, want 1", len(sent))
	}
	body, hdr, path := sent[0].Body, sent[0].Header, sent[0].Path
	if path != "/api/v1/chat/completions" {
		t.Errorf("path %s", path)
	}
	for k, want := range map[string]string{"Authorization": "Bearer sk-or-test", "X-Title": "Conch", "Content-Type": "application/json", "Accept": "text/event-stream"} {
		if got := hdr.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	wiretest.Golden(t, "request.golden.json", body, *update)
}

func TestHTTPErrors(t *testing.T) {
	quota := `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	rate := `{"error":{"message":"Rate limit reached for gpt-test in organization org-1 on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	tests := []struct {
		name    string
		handler http.HandlerFunc
		is      error
		says    string
		until   time.Duration // for a *LimitError
	}{
		{"quota with Retry-After", wiretest.Status(429, quota, "Retry-After", "120"), provider.ErrLimit, "OpenAI says: You exceeded your current quota", 120 * time.Second},
		{"quota with reset header", wiretest.Status(429, quota, "X-Ratelimit-Reset-Requests", "6m0s", "X-Ratelimit-Reset-Tokens", "1s"), provider.ErrLimit, "You exceeded your current quota", 6 * time.Minute},
		{"rate limit", wiretest.Status(429, rate, "X-Ratelimit-Reset-Requests", "20s"), provider.ErrOverload, "OpenAI is limiting how fast it is asked (429): Rate limit reached for gpt-test in organization org-1 on requests per min (RPM): Limit 3, Used 3, Requested 1. Try again in 20s.", 0},
		{"rate limit saying when", wiretest.Status(429, `{"error":{"message":"Rate limit reached. Please try again in 1.2s.","type":"requests","code":"rate_limit_exceeded"}}`, "Retry-After", "2"),
			provider.ErrOverload, "OpenAI is limiting how fast it is asked (429): Rate limit reached. Please try again in 1.2s.", 0},
		{"moderation", wiretest.Status(403, `{"error":{"code":403,"message":"Your input was flagged","metadata":{"reasons":["violence"]}}}`), provider.ErrAuth, "OpenAI does not allow this (403): Your input was flagged.", 0},
		{"bad key", wiretest.Status(401, `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`), provider.ErrAuth, "OpenAI refused the API key (401): Incorrect API key provided", 0},
		{"OpenRouter credits", wiretest.Status(402, `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/credits"}}`), provider.ErrLimit, "OpenAI says: Insufficient credits", 0},
		{"Ollama model not pulled", wiretest.Status(404, `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"not_found_error","param":null,"code":null}}`), provider.ErrNotReady, `model "llama9" not found, try pulling it first`, 0},
		{"server error", wiretest.Status(502, `{"error":{"code":502,"message":"Provider returned error"}}`), provider.ErrOverload, "OpenAI had a problem (502): Provider returned error. Try again in a moment.", 0},
		{"plain text error", wiretest.Status(500, "upstream connect error"), provider.ErrOverload, "upstream connect error", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newServer(t, tt.handler)
			start := time.Now()
			err := wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
			if !errors.Is(err, tt.is) {
				t.Fatalf("error %q is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
			var limit *provider.LimitError
			if errors.As(err, &limit) && tt.until > 0 {
				if d := limit.Until.Sub(start); d < tt.until-time.Second || d > tt.until+2*time.Second {
					t.Errorf("limit until %v from now, want %v", d, tt.until)
				}
			}
			if strings.Contains(strings.ToLower(err.Error()), "try again in 1.2s. try again") {
				t.Errorf("error %q says when to try again twice", err)
			}
		})
	}
}

func TestMidStreamErrorChunk(t *testing.T) {
	p := newServer(t, wiretest.SSE(
		data(textChunk("Partial ")),
		data(`{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"x","provider":"p","error":{"code":"server_error","message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`),
	))
	evs := wiretest.Stream(t, p, wiretest.Hello())
	if text(evs) != "Partial " {
		t.Fatalf("text %q", text(evs))
	}
	err := wiretest.LastErr(t, evs)
	if !errors.Is(err, provider.ErrOverload) || !strings.Contains(err.Error(), "Provider disconnected") {
		t.Fatalf("error %q", err)
	}
}

func TestMidStreamQuotaError(t *testing.T) {
	p := newServer(t, wiretest.SSE(data(`{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`)))
	err := wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
	var limit *provider.LimitError
	if !errors.As(err, &limit) || !strings.Contains(limit.Message, "quota") {
		t.Fatalf("error %q", err)
	}
}

func TestBrokenStreams(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		says   string
	}{
		{"malformed chunk", []string{data(textChunk("a")), data(`{"choices":[{"index":0,"delta":{"content":"b"`)}, "not JSON"},
		{"truncated", []string{data(roleChunk), data(textChunk("half a sen"))}, "ended before it was complete"},
		{"nothing at all", nil, "ended before it was complete"},
		{"bad tool arguments", []string{
			data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\": "}}]},"finish_reason":null}]}`),
			data(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
			"data: [DONE]\n\n",
		}, "asked for tool read_file with arguments that are not valid JSON"},
		{"nameless tool call", []string{
			data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`),
			"data: [DONE]\n\n",
		}, "without naming it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newServer(t, wiretest.SSE(tt.chunks...))
			err := wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
			if !errors.Is(err, provider.ErrProtocol) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error %q, want ErrProtocol saying %q", err, tt.says)
			}
		})
	}
}

func TestDoneWithoutDONELine(t *testing.T) {
	p := newServer(t, wiretest.SSE(data(textChunk("ok")), data(stopChunk)))
	evs := wiretest.Stream(t, p, wiretest.Hello())
	if last := evs[len(evs)-1]; last.Kind != provider.DoneEvent || last.StopReason != "stop" {
		t.Fatalf("last %+v", last)
	}
}

func TestCancelWhileServerStalls(t *testing.T) {
	p := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, data(textChunk("thinking")))
		w.(http.Flusher).Flush()
		wiretest.Stall(r)
	}))
	wiretest.StopsWhenCancelled(t, p, provider.TextDelta)
}

func TestCancelBeforeHeaders(t *testing.T) {
	p := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { wiretest.Stall(r) }))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ch, err := p.Stream(ctx, wiretest.Hello())
	if err != nil {
		t.Fatal(err)
	}
	if err := wiretest.LastErr(t, wiretest.Collect(t, ch)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %q", err)
	}
}

func TestInfoListsModels(t *testing.T) {
	srv := chatcompletions.New(t, nil, chatcompletions.Models("llama3.2:latest", "qwen3:8b"))
	p := New(Config{ID: "test", Name: "OpenAI", BaseURL: srv.BaseURL(), APIKey: "sk-test"})
	info := p.Info(context.Background())
	if !info.Ready || info.Reason != "" || !info.CanAsk || info.Kind != "openai" {
		t.Fatalf("info %+v", info)
	}
	if info.Models.Default != "llama3.2:latest" || info.Models.Fast != "llama3.2:latest" || strings.Join(info.Models.List, ",") != "llama3.2:latest,qwen3:8b" {
		t.Fatalf("models %+v", info.Models)
	}
	sent := srv.Requests()
	if len(sent) != 1 || sent[0].Path != "/v1/models" {
		t.Fatalf("requests %+v", sent)
	}
	if auth := sent[0].Header.Get("Authorization"); auth != "Bearer sk-test" {
		t.Fatalf("auth %q", auth)
	}
}

func TestInfoNotReady(t *testing.T) {
	p := newServer(t, wiretest.Status(401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`))
	info := p.Info(context.Background())
	if info.Ready || !strings.Contains(info.Reason, "refused the API key") {
		t.Fatalf("info %+v", info)
	}
	empty := newServer(t, wiretest.Status(200, `{"object":"list","data":[]}`))
	empty.cfg.DefaultModel = ""
	if info := empty.Info(context.Background()); info.Ready || info.Reason != "OpenAI offers no models yet." {
		t.Fatalf("info %+v", info)
	}
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestConnectionRefused(t *testing.T) {
	cfg := Ollama()
	cfg.BaseURL = "http://" + closedPort(t) + "/v1"
	cfg.DefaultModel = "llama3.2"
	p := New(cfg)
	want := fmt.Sprintf("Nothing answers at %s: is Ollama running?", cfg.BaseURL)
	info := p.Info(context.Background())
	if info.Ready || info.Reason != want {
		t.Fatalf("info %+v", info)
	}
	err := wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
	if !errors.Is(err, provider.ErrNotReady) || err.Error() != want {
		t.Fatalf("error %q", err)
	}
}

func TestStreamNeedsAModel(t *testing.T) {
	p := New(LMStudio())
	if _, err := p.Stream(context.Background(), wiretest.Hello()); !errors.Is(err, provider.ErrNotReady) {
		t.Fatalf("err %v", err)
	}
}

func TestPresets(t *testing.T) {
	for _, cfg := range []Config{Ollama(), LMStudio(), OpenRouter("k"), OpenAI("k")} {
		if cfg.ID == "" || cfg.Name == "" || !strings.HasPrefix(cfg.BaseURL, "http") || cfg.Category == "" {
			t.Errorf("preset %+v", cfg)
		}
	}
	if OpenRouter("k").Headers["X-Title"] != "Conch" || Ollama().Category != provider.LocalModel || OpenAI("k").Category != provider.ChatOnly {
		t.Error("preset details")
	}
}

func TestResetTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := http.Header{}
	if !resetTime(h, now).IsZero() {
		t.Fatal("no headers should give no time")
	}
	h.Set("Retry-After", "Fri, 02 Jan 2026 03:05:05 GMT")
	if got := resetTime(h, now); !got.Equal(now.Add(time.Minute)) {
		t.Fatalf("HTTP date: %v", got)
	}
	h.Set("X-Ratelimit-Reset", fmt.Sprint(now.Add(time.Hour).UnixMilli()))
	if got := resetTime(h, now); !got.Equal(now.Add(time.Hour)) {
		t.Fatalf("OpenRouter reset: %v", got)
	}
}
