package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"conch/backend/provider"
	"conch/backend/provider/internal/wiretest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// ev formats one event the way the API does: the name, then its data.
func ev(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

func newServer(t *testing.T, h http.Handler) *Provider {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return New(Config{BaseURL: srv.URL, APIKey: "sk-ant-test", DefaultModel: "claude-test"})
}

const (
	messageStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2,"cache_creation_input_tokens":10,"cache_read_input_tokens":100}}}`
	ping         = `{"type": "ping"}`
	messageStop  = `{"type":"message_stop"}`
)

// recorded is a reply with thinking, text and two tool_use blocks, one
// with its input split in pieces and one with no input at all.
var recorded = []string{
	ev("message_start", messageStart),
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me look at go.mod"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
	ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
	ev("ping", ping),
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Okay, let's"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" check the module."}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
	ev("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"read_file","input":{}}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"th\": \"go.m"}}`),
	ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"od\"}"}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":2}`),
	ev("content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_02","name":"list_files","input":{}}}`),
	ev("content_block_stop", `{"type":"content_block_stop","index":3}`),
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`),
	ev("message_stop", messageStop),
}

func TestStreamsTextAndToolUse(t *testing.T) {
	p := newServer(t, wiretest.SSE(recorded...))
	evs := wiretest.Stream(t, p, wiretest.Hello())
	var text strings.Builder
	var calls []provider.ToolCall
	var usage []provider.Usage
	for _, e := range evs {
		switch e.Kind {
		case provider.TextDelta:
			text.WriteString(e.Text)
		case provider.ToolCallEvent:
			calls = append(calls, *e.Call)
		case provider.UsageEvent:
			usage = append(usage, *e.Usage)
		}
	}
	if text.String() != "Okay, let's check the module." {
		t.Fatalf("text %q", text.String())
	}
	if len(calls) != 2 ||
		calls[0].ID != "toolu_01" || calls[0].Name != "read_file" || string(calls[0].Arguments) != `{"path": "go.mod"}` ||
		calls[1].ID != "toolu_02" || calls[1].Name != "list_files" || string(calls[1].Arguments) != `{}` {
		t.Fatalf("calls %+v", calls)
	}
	// message_delta's usage is cumulative: it overwrites output_tokens and
	// keeps the counts it leaves out.
	want := provider.Usage{InputTokens: 472, OutputTokens: 89, CacheWriteTokens: 10, CacheReadTokens: 100}
	if len(usage) != 2 || usage[0].OutputTokens != 2 || usage[1] != want {
		t.Fatalf("usage %+v, want last %+v", usage, want)
	}
	if done := evs[len(evs)-1]; done.Kind != provider.DoneEvent || done.StopReason != "tool_use" {
		t.Fatalf("last %+v", done)
	}
}

func TestUsageOverwrittenWhenMessageDeltaCarriesAll(t *testing.T) {
	p := newServer(t, wiretest.SSE(
		ev("message_start", messageStart),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":500,"output_tokens":15,"cache_read_input_tokens":0}}`),
		ev("message_stop", messageStop),
	))
	evs := wiretest.Stream(t, p, wiretest.Hello())
	u := evs[len(evs)-2]
	if u.Kind != provider.UsageEvent || *u.Usage != (provider.Usage{InputTokens: 500, OutputTokens: 15, CacheWriteTokens: 10}) {
		t.Fatalf("usage %+v", u.Usage)
	}
}

func TestErrorEventOverloaded(t *testing.T) {
	p := newServer(t, wiretest.SSE(
		ev("message_start", messageStart),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`),
		ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
	))
	err := wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
	if !errors.Is(err, provider.ErrOverload) || err.Error() != "Anthropic is overloaded; try again in a moment." {
		t.Fatalf("error %q", err)
	}
}

func TestErrorEventSpendLimit(t *testing.T) {
	p := newServer(t, wiretest.SSE(ev("error", `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified API usage limits (spend limit)."}}`)))
	err := wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
	var limit *provider.LimitError
	if !errors.As(err, &limit) || !strings.Contains(limit.Message, "Anthropic says: You have reached") {
		t.Fatalf("error %q", err)
	}
}

func apiErr(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_011"}`
}

func TestHTTPErrors(t *testing.T) {
	reset := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		is      error
		says    string
		until   time.Time // for a *LimitError
	}{
		{"529", wiretest.Status(529, apiErr("overloaded_error", "Overloaded")), provider.ErrOverload, "Anthropic is overloaded (529); try again in a moment.", time.Time{}},
		{"429 with retry-after", wiretest.Status(429, apiErr("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), "Retry-After", "30"),
			provider.ErrOverload, "Anthropic is limiting how fast it is asked (429): Number of request tokens has exceeded your per-minute rate limit. Try again in 30s.", time.Time{}},
		{"429 spend limit", wiretest.Status(429, apiErr("rate_limit_error", "You have reached your specified workspace API usage limits."+" Spend limit."),
			"Retry-After", "5", "Anthropic-Ratelimit-Requests-Remaining", "0", "Anthropic-Ratelimit-Requests-Reset", reset.Format(time.RFC3339),
			"Anthropic-Ratelimit-Tokens-Remaining", "9000", "Anthropic-Ratelimit-Tokens-Reset", reset.Add(time.Hour).Format(time.RFC3339)),
			provider.ErrLimit, "Anthropic says: You have reached", reset},
		{"401", wiretest.Status(401, apiErr("authentication_error", "invalid x-api-key")), provider.ErrAuth, "Anthropic refused the API key (401): invalid x-api-key.", time.Time{}},
		{"404", wiretest.Status(404, apiErr("not_found_error", "model: claude-test")), provider.ErrNotReady, "Anthropic cannot find that (404): model: claude-test.", time.Time{}},
		{"500", wiretest.Status(500, apiErr("api_error", "Internal server error")), provider.ErrOverload, "Anthropic had a problem (500): Internal server error. Try again in a moment.", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newServer(t, tt.handler)
			err := wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
			if !errors.Is(err, tt.is) {
				t.Fatalf("error %q is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
			if !tt.until.IsZero() {
				var limit *provider.LimitError
				if !errors.As(err, &limit) || !limit.Until.Equal(tt.until) {
					t.Errorf("limit %+v, want until %v", limit, tt.until)
				}
			}
		})
	}
}

func TestBadRequestHasNoSentinel(t *testing.T) {
	p := newServer(t, wiretest.Status(400, apiErr("invalid_request_error", "messages: roles must alternate")))
	err := wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
	for _, s := range []error{provider.ErrAuth, provider.ErrLimit, provider.ErrNotReady, provider.ErrOverload, provider.ErrProtocol} {
		if errors.Is(err, s) {
			t.Errorf("%q is %v", err, s)
		}
	}
	if err.Error() != "Anthropic rejected the request (400): messages: roles must alternate." {
		t.Fatalf("error %q", err)
	}
}

func TestBrokenStreams(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		says   string
	}{
		{"truncated", recorded[:8], "ended before it was complete"},
		{"malformed", []string{ev("message_start", messageStart), ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_del`)}, "not JSON"},
		{"bad tool input", []string{
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("message_stop", messageStop),
		}, "asked for tool read_file with input that is not a JSON object"},
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

func TestRequestHeadersAndBodyGolden(t *testing.T) {
	var body []byte
	var hdr http.Header
	var path string
	p := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		hdr, path = r.Header, r.URL.Path
		wiretest.SSE(ev("message_start", messageStart), ev("message_stop", messageStop))(w, r)
	}))
	p.cfg.MaxTokens = 1024
	req := provider.Request{
		System: "You are Conch.",
		Messages: []provider.Message{
			{Role: provider.User, Text: "What is in go.mod?"},
			{Role: provider.Assistant, Text: "Let me look.", ToolCalls: []provider.ToolCall{
				{ID: "toolu_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"go.mod"}`)},
				{ID: "toolu_2", Name: "list_files"},
			}},
			{Role: provider.ToolRole, ToolCallID: "toolu_1", Text: "module conch"},
			{Role: provider.ToolRole, ToolCallID: "toolu_2", Text: "no such folder", IsError: true},
			{Role: provider.User, Text: "And the tests?"},
			{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: "toolu_3", Name: "run_command", Arguments: json.RawMessage(`{"command":"go test ./..."}`)}}},
			{Role: provider.ToolRole, ToolCallID: "toolu_3"},
			{Role: provider.Assistant, Text: "They pass."},
		},
		Tools: []provider.ToolSpec{
			{Name: "read_file", Description: "Read a file in the chat's folder.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list_files", Description: "List files."},
		},
	}
	wiretest.Stream(t, p, req)
	if path != "/v1/messages" {
		t.Errorf("path %s", path)
	}
	for k, want := range map[string]string{"X-Api-Key": "sk-ant-test", "Anthropic-Version": "2023-06-01", "Content-Type": "application/json", "Accept": "text/event-stream"} {
		if got := hdr.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if hdr.Get("Authorization") != "" {
		t.Error("Authorization header sent")
	}
	wiretest.Golden(t, "request.golden.json", body, *update)
}

func TestCancelWhileServerStalls(t *testing.T) {
	p := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ev("message_start", messageStart)+ev("ping", ping))
		w.(http.Flusher).Flush()
		wiretest.Stall(r)
	}))
	wiretest.StopsWhenCancelled(t, p, provider.UsageEvent)
}

func TestInfo(t *testing.T) {
	var key string
	p := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key = r.Header.Get("X-Api-Key")
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"data":[{"type":"model","id":"claude-test","display_name":"Claude Test","created_at":"2025-02-19T00:00:00Z"},{"type":"model","id":"claude-small","display_name":"Claude Small","created_at":"2025-02-19T00:00:00Z"}],"has_more":false,"first_id":"claude-test","last_id":"claude-small"}`)
	}))
	info := p.Info(context.Background())
	if !info.Ready || !info.CanAsk || info.Category != provider.ChatOnly || info.Kind != "anthropic" || key != "sk-ant-test" {
		t.Fatalf("info %+v", info)
	}
	if info.Models.Default != "claude-test" || info.Models.Fast != DefaultFastModel || strings.Join(info.Models.List, ",") != "claude-test,claude-small" {
		t.Fatalf("models %+v", info.Models)
	}

	refused := newServer(t, wiretest.Status(401, apiErr("authentication_error", "invalid x-api-key")))
	if info := refused.Info(context.Background()); info.Ready || info.Reason != "Anthropic refused the API key (401): invalid x-api-key." {
		t.Fatalf("info %+v", info)
	}
	if info := New(Config{}).Info(context.Background()); info.Ready || info.Reason != "No API key is set for Anthropic." {
		t.Fatalf("info without a key %+v", info)
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	l.Close()
	p := New(Config{BaseURL: base, APIKey: "k"})
	err = wiretest.LastErr(t, wiretest.Stream(t, p, wiretest.Hello()))
	if !errors.Is(err, provider.ErrNotReady) || !strings.Contains(err.Error(), "Nothing answers at "+base) {
		t.Fatalf("error %q", err)
	}
	if info := p.Info(context.Background()); info.Ready || !strings.Contains(info.Reason, "Nothing answers") {
		t.Fatalf("info %+v", info)
	}
}
