// Package chatcompletions serves the OpenAI Chat Completions API (POST
// /v1/chat/completions, streamed as SSE chat.completion.chunk frames, the
// format OpenAI, OpenRouter, Ollama and LM Studio share) from a scripted
// brain on loopback, so that tests run Conch's own openai provider against
// it with its BaseURL set to the server's BaseURL.
//
// It answers
//
//	POST …/chat/completions  (SSE chunks, or one chat.completion when the request does not stream)
//	GET  …/models            (the ids given with Models)
//
// and 404s anything else in OpenAI's error JSON. Every request is kept
// (Requests), and every chat request is decoded into a modelserver.Turn
// and kept (Turns) before the brain sees it.
//
// A reply streams the way OpenAI streams one: a chunk with the assistant's
// role, the text in pieces that end at spaces, each tool call as a chunk
// with its id and name followed by its arguments in two halves, a chunk
// with the finish_reason ("stop" or "tool_calls"), the usage in a chunk
// with no choices when stream_options.include_usage asks for it, and then
// data: [DONE]. A Reply with Status non-zero is sent as that HTTP error,
// its Body as it is, with its Headers.
package chatcompletions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"conch/backend/testrig/modelserver"
)

// Server is a scripted Chat Completions API on loopback. It is safe for
// concurrent use, and so must its brain be: requests are answered at once,
// not one at a time, so that a brain may hold one back.
type Server struct {
	*httptest.Server
	brain  modelserver.ContextBrain
	models []string
	pace   *pace

	modelserver.Log[Request]
	seq atomic.Int64
}

// Request is one HTTP request the server got, of any path.
type Request struct {
	Method string
	// Path is the URL path, e.g. /v1/chat/completions.
	Path   string
	Header http.Header
	Body   []byte
}

// Option changes how a server answers.
type Option func(*Server)

// Models sets the model ids GET /models lists, in order; without it the
// list is empty.
func Models(ids ...string) Option {
	return func(s *Server) { s.models = append([]string(nil), ids...) }
}

// Paced makes the server take its time the way a model does, so that a
// client stopped at a random moment is caught before, during or after a
// reply: it thinks 20–150 ms before answering (drawn from a rand seeded
// with seed) and waits about 3 ms after each chunk. It gives a request up,
// without asking the brain or writing more, as soon as the client goes
// away.
func Paced(seed uint64) Option {
	return func(s *Server) { s.pace = &pace{rng: rand.New(rand.NewPCG(seed, 7))} }
}

// New starts a server answering chat requests from brain; it is closed at
// the end of the test.
func New(t testing.TB, brain modelserver.Brain, opts ...Option) *Server {
	return NewContext(t, func(_ context.Context, turn modelserver.Turn) modelserver.Reply { return brain(turn) }, opts...)
}

// NewContext is New for a brain that is given each request's context.
func NewContext(t testing.TB, brain modelserver.ContextBrain, opts ...Option) *Server {
	s := &Server{brain: brain}
	for _, o := range opts {
		o(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		// A brain holding a reply back until its request is cancelled
		// must not hold the test up.
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// BaseURL is the base URL to configure a client with: the server's URL
// with /v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	s.KeepRequest(Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.complete(r.Context(), w, body)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, http.StatusOK, s.modelList())
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	}
}

// modelList is the answer to GET /models.
func (s *Server) modelList() map[string]any {
	data := []map[string]any{}
	for _, id := range s.models {
		data = append(data, map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "conch"})
	}
	return map[string]any{"object": "list", "data": data}
}

// complete answers one chat request.
func (s *Server) complete(ctx context.Context, w http.ResponseWriter, body []byte) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	turn := decode(req)
	s.KeepTurn(turn)
	if !s.pace.think(ctx) {
		return
	}
	reply := s.brain(ctx, turn)
	if reply.Status != 0 {
		modelserver.WriteStatus(w, reply)
		return
	}
	reply.Calls = s.identify(reply.Calls)
	out := &answer{
		id: fmt.Sprintf("chatcmpl-%d", s.seq.Add(1)), model: req.Model, created: time.Now().Unix(),
		reply: reply, usage: req.StreamOptions.IncludeUsage,
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, out.whole())
		return
	}
	out.stream(ctx, w, s.pace.gap())
}

// identify is calls with an ID that no other call of the server's has for
// each call without one, and an empty object for arguments left out. It
// leaves the brain's slice as it was, so a brain may answer with the same
// calls twice.
func (s *Server) identify(calls []modelserver.Call) []modelserver.Call {
	calls = append([]modelserver.Call(nil), calls...)
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d", s.seq.Add(1))
		}
		if len(bytes.TrimSpace(calls[i].Args)) == 0 {
			calls[i].Args = json.RawMessage("{}")
		}
	}
	return calls
}

// pace is the think time and chunk gap of a Paced server; a nil pace
// answers at once.
type pace struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// think waits 20–150 ms, reporting false if the client went away first;
// without a pace it reports true at once.
func (p *pace) think(ctx context.Context) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	d := time.Duration(20+p.rng.IntN(130)) * time.Millisecond
	p.mu.Unlock()
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// gap is how long to wait after each chunk.
func (p *pace) gap() time.Duration {
	if p == nil {
		return 0
	}
	return 3 * time.Millisecond
}

// answer is one reply on its way to the client, in the wire format.
type answer struct {
	id, model string
	created   int64
	reply     modelserver.Reply
	// usage says whether the stream ends with a usage chunk.
	usage bool
}

// inputTokens is the input token count every usage reports.
const inputTokens = 100

// outputTokens is the output token count a usage reports unless the Reply
// says otherwise.
const outputTokens = 20

func (a *answer) finish() string {
	if len(a.reply.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (a *answer) usageJSON() map[string]int {
	out := outputTokens
	if a.reply.OutputTokens > 0 {
		out = a.reply.OutputTokens
	}
	return map[string]int{"prompt_tokens": inputTokens, "completion_tokens": out, "total_tokens": inputTokens + out}
}

// whole is the reply as one chat.completion object, for a request that
// does not stream.
func (a *answer) whole() map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if a.reply.Text != "" || len(a.reply.Calls) == 0 {
		msg["content"] = a.reply.Text
	}
	if len(a.reply.Calls) > 0 {
		var calls []any
		for _, c := range a.reply.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": string(c.Args)}})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": a.id, "object": "chat.completion", "created": a.created, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": a.finish()}},
		"usage":   a.usageJSON(),
	}
}

// stream sends the reply as SSE chunks, waiting gap after each, and stops
// as soon as the client goes away.
func (a *answer) stream(ctx context.Context, w http.ResponseWriter, gap time.Duration) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(data []byte) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		if gap > 0 {
			select {
			case <-time.After(gap):
			case <-ctx.Done():
			}
		}
		return ctx.Err() == nil
	}
	for _, c := range a.chunks() {
		if !send(modelserver.Marshal(c)) {
			return
		}
	}
	send([]byte("[DONE]"))
}

// chunks are the chat.completion.chunk objects of the reply, in order.
func (a *answer) chunks() []map[string]any {
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": a.id, "object": "chat.completion.chunk", "created": a.created, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	var out []map[string]any
	text, calls := a.reply.Text, a.reply.Calls
	if text != "" || len(calls) == 0 {
		out = append(out, chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		for _, piece := range pieces(text) {
			out = append(out, chunk(map[string]any{"content": piece}, nil))
		}
	}
	for i, c := range calls {
		first := map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}
		if len(out) == 0 {
			first["role"], first["content"] = "assistant", nil
		}
		out = append(out, chunk(first, nil))
		for _, half := range halves(string(c.Args)) {
			out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": half}}}}, nil))
		}
	}
	out = append(out, chunk(map[string]any{}, a.finish()))
	if a.usage {
		out = append(out, map[string]any{
			"id": a.id, "object": "chat.completion.chunk", "created": a.created, "model": a.model,
			"choices": []any{}, "usage": a.usageJSON(),
		})
	}
	return out
}

// pieces cuts text into the deltas it streams as: each ends at a space.
func pieces(text string) []string {
	var out []string
	for _, p := range strings.SplitAfter(text, " ") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// halves cuts s in two on a rune boundary, so that a call's arguments
// arrive split across chunks as OpenAI splits them.
func halves(s string) []string {
	half := len(s) / 2
	for half > 0 && !utf8.RuneStart(s[half]) {
		half--
	}
	return []string{s[:half], s[half:]}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(modelserver.Marshal(v))
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}
