// Package anthropic serves the Anthropic Messages API (POST /v1/messages,
// streamed as SSE the way api.anthropic.com streams it) from a scripted
// modelserver.Brain on loopback, so that tests can run the real Claude
// Code CLI against it with ANTHROPIC_BASE_URL set to the server's URL.
//
// Besides /v1/messages it answers the other requests the CLI makes:
// non-streaming /v1/messages calls, /v1/messages/count_tokens, /v1/models,
// and HEAD/GET probes of any path. Every request is logged (see Requests)
// so a test can see what the CLI called.
package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"conch/backend/testrig/modelserver"
)

// Server is a scripted Anthropic Messages API on loopback.
type Server struct {
	*httptest.Server
	brain modelserver.Brain
	t     testing.TB

	// Quiet stops the per-request t.Logf lines.
	Quiet bool

	modelserver.Log[Request]
	n     atomic.Int64
	think sync.Mutex // one brain call at a time
}

// Request is one HTTP request the server received.
type Request struct {
	Method string
	// Path is the URL path; Claude Code asks for /v1/messages?beta=true,
	// RawQuery keeps the query.
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// New starts a server answering POST /v1/messages from brain; it is
// closed at the end of the test. The brain is called for every Messages
// request, one call at a time, and each request is kept in Turns.
func New(t testing.TB, brain modelserver.Brain) *Server {
	s := Start(brain)
	s.t = t
	t.Cleanup(s.Close)
	return s
}

// Start starts a server answering with brain, for a program rather than
// a test; Close stops it.
func Start(brain modelserver.Brain) *Server {
	s := &Server{brain: brain}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *Server) logf(format string, args ...any) {
	if !s.Quiet && s.t != nil {
		s.t.Logf(format, args...)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages":
		s.messages(w, req)
		return
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		s.add(req)
		s.logf("anthropic: %s %s", r.Method, r.URL)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 1 + len(body)/4})
		return
	case r.Method == http.MethodGet && (path == "/v1/models" || strings.HasPrefix(path, "/v1/models/")):
		s.add(req)
		s.logf("anthropic: %s %s", r.Method, r.URL)
		if id, ok := strings.CutPrefix(path, "/v1/models/"); ok && id != "" {
			writeJSON(w, http.StatusOK, model(id))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"data":     []any{model("claude-sonnet-4-5"), model("claude-opus-4-1"), model("claude-haiku-4-5")},
			"has_more": false, "first_id": "claude-sonnet-4-5", "last_id": "claude-haiku-4-5",
		})
		return
	}
	s.add(req)
	s.logf("anthropic: %s %s (probe)", r.Method, r.URL)
	if r.Method == http.MethodHead || r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			io.WriteString(w, "{}")
		}
		return
	}
	writeError(w, http.StatusNotFound, "not_found_error", "no such endpoint: "+r.Method+" "+path)
}

func model(id string) map[string]any {
	return map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"}
}

func (s *Server) add(r Request) { s.KeepRequest(r) }

// wire types of a Messages request.
type request struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	Messages  []wireMessage   `json:"messages"`
	Tools     []wireTool      `json:"tools"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wireTool struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// blocks decodes a content that is either a string or a list of blocks.
func blocks(raw json.RawMessage) []block {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	json.Unmarshal(raw, &bs)
	return bs
}

func texts(bs []block) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Decode turns a Messages request body into a Turn: the system blocks
// joined, one message per user or assistant message (its text blocks
// joined, its tool_use blocks as Calls), and one "tool" message per
// tool_result block, in order.
func Decode(body []byte) (modelserver.Turn, error) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return modelserver.Turn{}, err
	}
	return decode(req), nil
}

func decode(req request) modelserver.Turn {
	turn := modelserver.Turn{Model: req.Model}
	system := []string{texts(blocks(req.System))}
	for _, t := range req.Tools {
		turn.Tools = append(turn.Tools, t.Name)
	}
	for _, m := range req.Messages {
		if m.Role == "system" {
			// Claude Code sends mid-conversation system turns as messages
			// of role "system"; they are instructions, not conversation.
			system = append(system, texts(blocks(m.Content)))
			continue
		}
		msg := modelserver.Message{Role: m.Role}
		var text []string
		flush := func() {
			if len(text) > 0 || len(msg.Calls) > 0 {
				msg.Text = strings.Join(text, "\n")
				turn.Messages = append(turn.Messages, msg)
			}
			msg, text = modelserver.Message{Role: m.Role}, nil
		}
		for _, b := range blocks(m.Content) {
			switch b.Type {
			case "text":
				if isReminder(b.Text) {
					// <system-reminder> blocks the CLI adds to user
					// messages are instructions too.
					system = append(system, b.Text)
					continue
				}
				text = append(text, b.Text)
			case "tool_use", "server_tool_use":
				args := b.Input
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				msg.Calls = append(msg.Calls, modelserver.Call{ID: b.ID, Name: b.Name, Args: args})
			case "tool_result":
				flush()
				turn.Messages = append(turn.Messages, modelserver.Message{
					Role: "tool", Text: texts(blocks(b.Content)), CallID: b.ToolUseID,
				})
			}
		}
		flush()
	}
	turn.System = strings.Join(system, "\n")
	return turn
}

func isReminder(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "<system-reminder>") && strings.HasSuffix(t, "</system-reminder>")
}

func (s *Server) messages(w http.ResponseWriter, r Request) {
	s.add(r)
	var req request
	if err := json.Unmarshal(r.Body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	turn := decode(req)
	s.logf("anthropic: POST /v1/messages model=%s stream=%v max_tokens=%d tools=%d messages=%d",
		req.Model, req.Stream, req.MaxTokens, len(req.Tools), len(req.Messages))
	s.KeepTurn(turn)
	s.think.Lock()
	reply := s.brain(turn)
	s.think.Unlock()
	if reply.Status != 0 {
		modelserver.WriteStatus(w, reply)
		return
	}
	id := fmt.Sprintf("msg_%024d", s.n.Add(1))
	for i := range reply.Calls {
		if reply.Calls[i].ID == "" {
			reply.Calls[i].ID = fmt.Sprintf("toolu_%024d", s.n.Add(1))
		}
		if len(reply.Calls[i].Args) == 0 {
			reply.Calls[i].Args = json.RawMessage("{}")
		}
	}
	stop := "end_turn"
	if len(reply.Calls) > 0 {
		stop = "tool_use"
	}
	for k, v := range reply.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("request-id", "req_"+id)
	if !req.Stream {
		writeMessage(w, id, req.Model, stop, reply)
		return
	}
	streamMessage(w, id, req.Model, stop, reply)
}

// writeMessage answers with the whole message at once, as JSON.
func writeMessage(w http.ResponseWriter, id, model, stop string, reply modelserver.Reply) {
	var content []any
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for _, c := range reply.Calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Args})
	}
	if content == nil {
		content = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	})
}

// streamMessage answers with the message as the API streams it: a text
// block, then a block for each call, each in small deltas.
func streamMessage(w http.ResponseWriter, id, model, stop string, reply modelserver.Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "cache_creation_input_tokens": 0,
			"cache_read_input_tokens": 0, "output_tokens": 1},
	}})
	event("ping", map[string]any{"type": "ping"})
	index := 0
	if reply.Text != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, part := range split(reply.Text, 3) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": part}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, c := range reply.Calls {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		var compact bytes.Buffer
		if json.Compact(&compact, c.Args) != nil {
			compact.Reset()
			compact.Write(c.Args)
		}
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": ""}})
		for _, part := range split(compact.String(), 3) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// split cuts s into up to n pieces of about equal length, on rune
// boundaries; an empty s gives no pieces.
func split(s string, n int) []string {
	rs := []rune(s)
	if len(rs) == 0 {
		return nil
	}
	size := (len(rs) + n - 1) / n
	var out []string
	for i := 0; i < len(rs); i += size {
		out = append(out, string(rs[i:min(i+size, len(rs))]))
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, ErrorBody(typ, msg))
}

// ErrorBody is the JSON of an Anthropic API error, e.g.
// ErrorBody("rate_limit_error", "Number of requests has exceeded your rate limit").
func ErrorBody(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// RateLimit is a Reply that answers 429 rate_limit_error with a
// retry-after of retryAfter seconds (none when empty).
func RateLimit(retryAfter string) modelserver.Reply {
	return RateLimitSaying("Number of request tokens has exceeded your per-minute rate limit", retryAfter)
}

// RateLimitSaying is RateLimit with the error's message, e.g. "This
// request would exceed the rate limit for your organization of 50
// requests per minute."
func RateLimitSaying(message, retryAfter string) modelserver.Reply {
	b, _ := json.Marshal(ErrorBody("rate_limit_error", message))
	r := modelserver.Reply{Status: http.StatusTooManyRequests, Body: string(b), Headers: map[string]string{}}
	if retryAfter != "" {
		r.Headers["retry-after"] = retryAfter
	}
	return r
}
