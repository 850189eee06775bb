// Package responses serves the OpenAI Responses API (POST /v1/responses,
// streamed as server-sent events) from a scripted modelserver.Brain, in
// the wire format the Codex CLI (0.171) reads. Point Codex at it with a
// custom model provider (see CodexConfig and docs/agents/codex.md).
//
// Requests are decoded into a modelserver.Turn: developer and system
// messages, the instructions field and the context Codex injects as
// tagged user messages (<environment_context>, # AGENTS.md instructions…)
// go to System; user and assistant messages, function_call and
// custom_tool_call items (the model's tool calls) and their outputs go to
// Messages; reasoning items are dropped.
//
// A Reply's Calls are answered as function_call items, or as
// custom_tool_call items when the request offered that name as a custom
// (freeform) tool, as Codex does for apply_patch. A Reply with Status
// non-zero is sent as that HTTP error.
package responses

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/testrig/modelserver"
)

// Server is a scripted Responses API server on loopback.
type Server struct {
	*httptest.Server
	brain modelserver.Brain

	modelserver.Log[Request]

	mu  sync.Mutex // guards seq
	seq int
}

// Request is one HTTP request the server got, of any path.
type Request struct {
	Time   time.Time
	Method string
	Path   string
	Header http.Header
	// Body is the request body (decompressed).
	Body []byte
	// Status is the HTTP status it was answered with.
	Status int
}

// New starts a server answering with brain; it is closed when t ends.
func New(t testing.TB, brain modelserver.Brain) *Server {
	s := Start(brain)
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

// BaseURL is the base_url to configure: the server's URL with /v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// CodexConfig is a config.toml for a CODEX_HOME in which Codex talks to
// this server only: a custom provider "conch" reading its API key from
// the environment variable envKey, model gpt-5.5 (so that Codex knows its
// tools), no retries, and the plugin, app and analytics features that
// reach the internet off. Append more TOML (MCP servers…) to it.
func (s *Server) CodexConfig(envKey string) string {
	return CodexConfig(s.BaseURL(), envKey, "request_max_retries = 0\nstream_max_retries = 0\n")
}

// CodexConfig is the config.toml of Server.CodexConfig for any base URL,
// with retries the provider's retry settings (TOML lines).
func CodexConfig(baseURL, envKey, retries string) string {
	return fmt.Sprintf(`model = "gpt-5.5"
model_provider = "conch"
model_reasoning_effort = "low"
check_for_update_on_startup = false

[model_providers.conch]
name = "Conch test"
base_url = %q
wire_api = "responses"
env_key = %q
stream_idle_timeout_ms = 20000
%s
[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[features]
plugins = false
remote_plugin = false
apps = false
`, baseURL, envKey, retries)
}

// Paths are "METHOD /path" of all requests, oldest first.
func (s *Server) Paths() []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// RawTurns are the bodies of the /responses requests, oldest first.
func (s *Server) RawTurns() []json.RawMessage {
	var out []json.RawMessage
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/responses") {
			out = append(out, json.RawMessage(r.Body))
		}
	}
	return out
}

// arrived records a request as it arrives; the returned func sets the
// status it was answered with.
func (s *Server) arrived(r *http.Request, body []byte) func(status int) {
	change := s.KeepRequest(Request{
		Time: time.Now(), Method: r.Method, Path: r.URL.Path,
		Header: r.Header.Clone(), Body: body,
	})
	return func(status int) { change(func(r *Request) { r.Status = status }) }
}

func (s *Server) next(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s_%04d", prefix, s.seq)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	answered := s.arrived(r, body)
	if err != nil {
		answered(http.StatusBadRequest)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		answered(s.responses(w, body))
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		answered(http.StatusOK)
		writeJSON(w, http.StatusOK, modelList())
	default:
		answered(http.StatusNotFound)
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	}
}

func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		rd = gz
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
	return io.ReadAll(rd)
}

// modelList answers GET /v1/models in the OpenAI shape (data), with an
// empty "models" for clients reading a Codex-style catalog. Codex 0.171
// with a custom provider never asked for it.
func modelList() map[string]any {
	return map[string]any{
		"object": "list",
		"data": []map[string]any{
			{"id": "gpt-5.5", "object": "model", "created": 1700000000, "owned_by": "conch"},
		},
		"models": []any{},
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b := modelserver.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// request is the part of a Responses request the server reads.
type request struct {
	Model        string            `json:"model"`
	Instructions string            `json:"instructions"`
	Input        []json.RawMessage `json:"input"`
	Tools        []tool            `json:"tools"`
}

type tool struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Tools []tool `json:"tools"` // of a namespace
}

// item is one input item; fields of all the kinds read.
type item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Output    json.RawMessage `json:"output"`
	// The tools a tool_search_output found.
	Tools json.RawMessage `json:"tools"`
}

// responses answers POST /v1/responses, returning the status sent.
func (s *Server) responses(w http.ResponseWriter, body []byte) int {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "invalid JSON body: "+err.Error())
		return http.StatusBadRequest
	}
	turn, kinds := decode(req)
	s.KeepTurn(turn)

	reply := s.brain(turn)
	if reply.Status != 0 {
		modelserver.WriteStatus(w, reply)
		return reply.Status
	}
	s.stream(w, req.Model, reply, kinds)
	return http.StatusOK
}

// contextTag matches the user messages Codex injects as context, such as
// <environment_context>…</environment_context>.
var contextTag = regexp.MustCompile(`(?s)^\s*<([a-z_]+)>.*</([a-z_]+)>\s*$`)

func isContext(text string) bool {
	if strings.HasPrefix(text, "# AGENTS.md instructions") {
		return true
	}
	m := contextTag.FindStringSubmatch(text)
	return m != nil && m[1] == m[2] && m[1] != "turn_aborted"
}

// sse writes one event and flushes it.
type sse struct {
	w  http.ResponseWriter
	fl http.Flusher
	n  int
}

func (e *sse) send(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = e.n
	e.n++
	b := modelserver.Marshal(fields)
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", typ, b)
	if e.fl != nil {
		e.fl.Flush()
	}
}

// chunks splits text into a few deltas, at spaces.
func chunks(text string) []string {
	var out []string
	for len(text) > 0 {
		i := strings.IndexByte(text[min(len(text), 1):], ' ')
		if i < 0 {
			out = append(out, text)
			break
		}
		i++
		out = append(out, text[:i])
		text = text[i:]
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, model string, reply modelserver.Reply, kinds map[string]toolKind) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	e := &sse{w: w, fl: fl}
	id := s.next("resp")
	created := time.Now().Unix()
	resp := func(status string, output []any) map[string]any {
		return map[string]any{
			"id": id, "object": "response", "created_at": created, "status": status,
			"model": model, "output": output,
		}
	}
	e.send("response.created", map[string]any{"response": resp("in_progress", []any{})})
	e.send("response.in_progress", map[string]any{"response": resp("in_progress", []any{})})

	var output []any
	outTokens := 0
	if reply.Text != "" {
		outTokens += len(chunks(reply.Text))
		output = append(output, s.streamText(e, len(output), reply.Text))
	}
	for _, c := range reply.Calls {
		outTokens += 10
		output = append(output, s.streamCall(e, len(output), c, kinds[c.Name]))
	}
	inTokens := 100
	final := resp("completed", output)
	final["usage"] = map[string]any{
		"input_tokens":          inTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": 0},
		"output_tokens":         outTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          inTokens + outTokens,
	}
	e.send("response.completed", map[string]any{"response": final})
}

// streamText streams the reply's text as message item idx and returns the
// item done.
func (s *Server) streamText(e *sse, idx int, text string) map[string]any {
	msgID := s.next("msg")
	e.send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
		"type": "message", "id": msgID, "status": "in_progress", "role": "assistant", "content": []any{},
	}})
	e.send("response.content_part.added", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, d := range chunks(text) {
		e.send("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "delta": d})
	}
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	e.send("response.output_text.done", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "text": text})
	e.send("response.content_part.done", map[string]any{"item_id": msgID, "output_index": idx, "content_index": 0, "part": part})
	done := map[string]any{"type": "message", "id": msgID, "status": "completed", "role": "assistant", "content": []any{part}}
	e.send("response.output_item.done", map[string]any{"output_index": idx, "item": done})
	return done
}

// streamCall streams call c as item idx, the shape its tool's kind takes
// (tool_search_call, custom_tool_call or function_call), and returns the
// item done.
func (s *Server) streamCall(e *sse, idx int, c modelserver.Call, kind toolKind) map[string]any {
	callID := c.ID
	if callID == "" {
		callID = s.next("call")
	}
	var added, done map[string]any
	if kind.Type == "tool_search" {
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		itemID := s.next("ts")
		added = map[string]any{"type": "tool_search_call", "id": itemID, "status": "in_progress", "call_id": callID, "execution": "client", "arguments": json.RawMessage(`{}`)}
		done = map[string]any{"type": "tool_search_call", "id": itemID, "status": "completed", "call_id": callID, "execution": "client", "arguments": args}
		e.send("response.output_item.added", map[string]any{"output_index": idx, "item": added})
	} else if kind.Type == "custom" {
		input := string(c.Args)
		var str string
		var obj struct {
			Input string `json:"input"`
		}
		if json.Unmarshal(c.Args, &str) == nil {
			input = str
		} else if json.Unmarshal(c.Args, &obj) == nil && obj.Input != "" {
			input = obj.Input
		}
		itemID := s.next("ctc")
		added = map[string]any{"type": "custom_tool_call", "id": itemID, "status": "in_progress", "call_id": callID, "name": c.Name, "input": ""}
		done = map[string]any{"type": "custom_tool_call", "id": itemID, "status": "completed", "call_id": callID, "name": c.Name, "input": input}
		e.send("response.output_item.added", map[string]any{"output_index": idx, "item": added})
		e.send("response.custom_tool_call_input.delta", map[string]any{"item_id": itemID, "output_index": idx, "delta": input})
		e.send("response.custom_tool_call_input.done", map[string]any{"item_id": itemID, "output_index": idx, "input": input})
	} else {
		args := string(c.Args)
		if args == "" {
			args = "{}"
		}
		itemID := s.next("fc")
		name := c.Name
		if kind.Namespace != "" {
			name = kind.Name
		}
		added = map[string]any{"type": "function_call", "id": itemID, "status": "in_progress", "call_id": callID, "name": name, "arguments": ""}
		done = map[string]any{"type": "function_call", "id": itemID, "status": "completed", "call_id": callID, "name": name, "arguments": args}
		if ns := kind.Namespace; ns != "" {
			added["namespace"], done["namespace"] = ns, ns
		}
		e.send("response.output_item.added", map[string]any{"output_index": idx, "item": added})
		e.send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": idx, "delta": args})
		e.send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": idx, "arguments": args})
	}
	e.send("response.output_item.done", map[string]any{"output_index": idx, "item": done})
	return done
}

// Exec is a call of Codex's shell tool, exec_command, running cmd (in
// bash -lc, in the turn's cwd).
func Exec(id, cmd string) modelserver.Call {
	return modelserver.Call{ID: id, Name: "exec_command", Args: modelserver.Marshal(map[string]any{"cmd": cmd})}
}

// Patch is a call of Codex's apply_patch tool, a custom (freeform) tool
// whose whole input is the patch text ("*** Begin Patch\n*** Add File:
// x\n+line\n*** End Patch\n"). Its Args are the JSON string of it.
func Patch(id, patch string) modelserver.Call {
	return modelserver.Call{ID: id, Name: "apply_patch", Args: modelserver.Marshal(patch)}
}

// Search is a call of Codex's tool_search, which finds the deferred
// tools (MCP tools) matching query; they are offered from the next
// request on, by their qualified name (mcp__server__tool).
func Search(id, query string) modelserver.Call {
	return modelserver.Call{ID: id, Name: "tool_search", Args: modelserver.Marshal(map[string]any{"query": query, "limit": 8})}
}

// RateLimit is a 429 for a per-minute limit, in the OpenAI shape, with
// retry-after (seconds).
func RateLimit(model string, retryAfter int) modelserver.Reply {
	msg := fmt.Sprintf("Rate limit reached for %s in organization org-conchtest on tokens per min (TPM): "+
		"Limit 30000, Used 30000, Requested 1200. Please try again in %ds. "+
		"Visit https://platform.openai.com/account/rate-limits to learn more.", model, retryAfter)
	return errorReply(http.StatusTooManyRequests, "tokens", "rate_limit_exceeded", msg, map[string]string{
		"retry-after":                    strconv.Itoa(retryAfter),
		"x-ratelimit-limit-tokens":       "30000",
		"x-ratelimit-remaining-tokens":   "0",
		"x-ratelimit-reset-tokens":       strconv.Itoa(retryAfter) + "s",
		"x-ratelimit-limit-requests":     "500",
		"x-ratelimit-remaining-requests": "499",
		"x-ratelimit-reset-requests":     "120ms",
	})
}

// Quota is the 429 OpenAI sends when the account is out of credit.
func Quota() modelserver.Reply {
	return errorReply(http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota",
		"You exceeded your current quota, please check your plan and billing details. "+
			"For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.", nil)
}

func errorReply(status int, typ, code, msg string, headers map[string]string) modelserver.Reply {
	body := modelserver.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}})
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	return modelserver.Reply{Status: status, Body: string(body), Headers: h}
}
