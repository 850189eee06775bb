// Package gemini serves the Gemini API (generativelanguage v1beta, the
// one the Gemini CLI calls with an API key) from a scripted
// modelserver.Brain on loopback, so that tests can run the real Gemini CLI
// against it with GOOGLE_GEMINI_BASE_URL set to the server's URL.
//
// It answers
//
//	POST /v1beta/models/{model}:streamGenerateContent?alt=sse  (SSE chunks)
//	POST /v1beta/models/{model}:generateContent                (one JSON)
//	POST /v1beta/models/{model}:countTokens
//	GET  /v1beta/models[/{model}]
//
// and 404s anything else in Google's error JSON. Every request is logged
// (see Requests), so a test can see what the CLI called.
//
// Streamed requests are the agent loop: they are decoded into a
// modelserver.Turn, recorded (Turns) and answered by the brain. Non-streamed
// generateContent requests are the CLI's side chores; they go to Side when
// it is set and are answered with SideText (or "{}" when the CLI asked for
// JSON) otherwise, and never reach the brain nor Turns.
//
// A Reply with Status != 0 is sent as that HTTP status with its Body and
// Headers as they are (see PerMinuteLimit and DailyQuota for the 429s the
// real API sends). A Reply with Status == 0 and a Body is sent as the raw
// 200 body (see SSE), for chunks a Reply cannot say, such as thoughts.
package gemini

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"conch/backend/testrig/modelserver"
)

// Server is a scripted Gemini API on loopback.
type Server struct {
	*httptest.Server
	brain modelserver.Brain
	t     testing.TB

	// Quiet stops the per-request t.Logf lines.
	Quiet bool

	// Side answers the non-streamed generateContent requests when set;
	// otherwise they get SideText ("{}" when the request asked for JSON).
	Side     modelserver.Brain
	SideText string

	modelserver.Log[Request]
	n atomic.Int64
}

// Request is one HTTP request the server received.
type Request struct {
	Method string
	// Path is the URL path, e.g. /v1beta/models/gemini-2.5-flash:streamGenerateContent.
	Path string
	// Query is the raw query, e.g. alt=sse.
	Query  string
	Header http.Header
	Body   []byte
	// Model and Action are split from a /v1beta/models/{model}:{action} path.
	Model, Action string
	// Status is the HTTP status it was answered with.
	Status int
}

// New starts a server answering streamGenerateContent from brain; it is
// closed at the end of the test.
func New(t testing.TB, brain modelserver.Brain) *Server {
	s := Start(brain)
	s.t = t
	t.Cleanup(s.Close)
	return s
}

// Start starts a server answering with brain, for a program rather than
// a test; Close stops it.
func Start(brain modelserver.Brain) *Server {
	s := &Server{brain: brain, SideText: "ok"}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Paths are the "METHOD path?query" of every request so far, oldest first.
func (s *Server) Paths() []string {
	var out []string
	for _, r := range s.Requests() {
		p := r.Method + " " + r.Path
		if r.Query != "" {
			p += "?" + r.Query
		}
		out = append(out, p)
	}
	return out
}

func (s *Server) logf(format string, args ...any) {
	if !s.Quiet && s.t != nil {
		s.t.Logf(format, args...)
	}
}

func (s *Server) add(r Request) { s.KeepRequest(r) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	rest, isModels := strings.CutPrefix(r.URL.Path, "/v1beta/models")
	if !isModels {
		// v1 and v1alpha paths too, should the CLI be told another version.
		for _, v := range []string{"/v1/models", "/v1alpha/models"} {
			if rest, isModels = strings.CutPrefix(r.URL.Path, v); isModels {
				break
			}
		}
	}
	if isModels {
		req.Model, req.Action, _ = strings.Cut(strings.TrimPrefix(rest, "/"), ":")
	}
	switch {
	case isModels && r.Method == http.MethodPost && req.Action == "streamGenerateContent":
		s.generate(w, req, true)
		return
	case isModels && r.Method == http.MethodPost && req.Action == "generateContent":
		s.generate(w, req, false)
		return
	case isModels && r.Method == http.MethodPost && req.Action == "countTokens":
		req.Status = http.StatusOK
		s.add(req)
		s.logf("gemini: %s %s", r.Method, r.URL)
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 1 + len(body)/4})
		return
	case isModels && r.Method == http.MethodGet && req.Model == "":
		req.Status = http.StatusOK
		s.add(req)
		s.logf("gemini: %s %s", r.Method, r.URL)
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{
			modelInfo("gemini-2.5-pro"), modelInfo("gemini-2.5-flash"), modelInfo("gemini-2.5-flash-lite"),
		}})
		return
	case isModels && r.Method == http.MethodGet && req.Action == "":
		req.Status = http.StatusOK
		s.add(req)
		s.logf("gemini: %s %s", r.Method, r.URL)
		writeJSON(w, http.StatusOK, modelInfo(req.Model))
		return
	}
	req.Status = http.StatusNotFound
	s.add(req)
	s.logf("gemini: %s %s (unknown) -> 404", r.Method, r.URL)
	writeJSON(w, http.StatusNotFound, ErrorBody(http.StatusNotFound, "NOT_FOUND",
		"no such endpoint: "+r.Method+" "+r.URL.Path))
}

func modelInfo(id string) map[string]any {
	return map[string]any{
		"name": "models/" + id, "displayName": id, "version": "001",
		"inputTokenLimit": 1048576, "outputTokenLimit": 65536,
		"supportedGenerationMethods": []string{"generateContent", "countTokens", "streamGenerateContent"},
	}
}

func (s *Server) generate(w http.ResponseWriter, r Request, stream bool) {
	var req GenerateRequest
	if err := json.Unmarshal(r.Body, &req); err != nil {
		r.Status = http.StatusBadRequest
		s.add(r)
		writeJSON(w, http.StatusBadRequest, ErrorBody(http.StatusBadRequest, "INVALID_ARGUMENT", err.Error()))
		return
	}
	turn := decode(req)
	turn.Model = r.Model
	var reply modelserver.Reply
	switch {
	case stream:
		s.KeepTurn(turn)
		reply = s.brain(turn)
	case s.Side != nil:
		reply = s.Side(turn)
	default:
		reply = modelserver.Reply{Text: s.SideText}
		if wantsJSON(req.GenerationConfig) {
			reply.Text = "{}"
		}
	}
	r.Status = http.StatusOK
	if reply.Status != 0 {
		r.Status = reply.Status
	}
	s.add(r)
	path := r.Path
	if r.Query != "" {
		path += "?" + r.Query
	}
	s.logf("gemini: POST %s model=%s tools=%d contents=%d -> %d", path, r.Model, len(turn.Tools), len(req.Contents), r.Status)
	for k, v := range reply.Headers {
		w.Header().Set(k, v)
	}
	if reply.Status != 0 {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		}
		w.WriteHeader(reply.Status)
		io.WriteString(w, reply.Body)
		return
	}
	id := fmt.Sprintf("resp-%06d", s.n.Add(1))
	if !stream {
		writeGenerated(w, r.Model, id, reply)
		return
	}
	streamGenerated(w, r.Model, id, reply)
}

// writeGenerated answers generateContent: the reply's Body as it is, else
// one response with its text and calls.
func writeGenerated(w http.ResponseWriter, model, id string, reply modelserver.Reply) {
	if reply.Body != "" {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, reply.Body)
		return
	}
	var parts []Part
	if reply.Text != "" {
		parts = append(parts, TextPart(reply.Text))
	}
	for _, c := range reply.Calls {
		parts = append(parts, CallPart(c))
	}
	if parts == nil {
		parts = []Part{TextPart("")}
	}
	resp := Chunk("STOP", parts...)
	resp.ModelVersion, resp.ResponseID = model, id
	writeJSON(w, http.StatusOK, resp)
}

// streamGenerated answers streamGenerateContent over SSE: the reply's Body
// as it is, else the text in three chunks, then each call in one, the last
// chunk carrying finishReason and usage, as the real API streams.
func streamGenerated(w http.ResponseWriter, model, id string, reply modelserver.Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if reply.Body != "" {
		io.WriteString(w, reply.Body)
		return
	}
	var chunks [][]Part
	for _, piece := range split(reply.Text, 3) {
		chunks = append(chunks, []Part{TextPart(piece)})
	}
	for _, c := range reply.Calls {
		chunks = append(chunks, []Part{CallPart(c)})
	}
	if len(chunks) == 0 {
		chunks = [][]Part{{TextPart("")}}
	}
	for i, parts := range chunks {
		finish := ""
		if i == len(chunks)-1 {
			finish = "STOP"
		}
		c := Chunk(finish, parts...)
		c.ModelVersion, c.ResponseID = model, id
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func wantsJSON(genConfig json.RawMessage) bool {
	var g struct {
		ResponseMimeType string `json:"responseMimeType"`
	}
	json.Unmarshal(genConfig, &g)
	return g.ResponseMimeType == "application/json"
}

// ErrorBody is Google's error JSON: {"error":{"code","message","status","details"}}.
func ErrorBody(code int, status, message string, details ...any) map[string]any {
	e := map[string]any{"code": code, "message": message, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	return map[string]any{"error": e}
}

// ErrorReply is a Reply that answers with Google's error JSON.
func ErrorReply(code int, status, message string, details ...any) modelserver.Reply {
	b, _ := json.MarshalIndent(ErrorBody(code, status, message, details...), "", "  ")
	return modelserver.Reply{Status: code, Body: string(b),
		Headers: map[string]string{"Content-Type": "application/json; charset=UTF-8"}}
}

// PerMinuteLimit is the 429 RESOURCE_EXHAUSTED the Gemini API answers when
// a per-minute request quota of model is used up, as the real API words
// it. retryDelay ("20s", "1.5s", "500ms") goes into its RetryInfo detail
// and its message; empty leaves them out, and the CLI then waits 60s.
func PerMinuteLimit(model, retryDelay string) modelserver.Reply {
	msg := "You exceeded your current quota, please check your plan and billing details. " +
		"For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n" +
		"* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: " + model
	details := []any{
		map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []any{map[string]any{
				"quotaMetric":     "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":         "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
				"quotaDimensions": map[string]any{"location": "global", "model": model},
				"quotaValue":      "10",
			}},
		},
		map[string]any{
			"@type": "type.googleapis.com/google.rpc.Help",
			"links": []any{map[string]any{"description": "Learn more about Gemini API quotas",
				"url": "https://ai.google.dev/gemini-api/docs/rate-limits"}},
		},
	}
	if retryDelay != "" {
		msg += "\nPlease retry in " + retryDelay + "."
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retryDelay,
		})
	}
	return ErrorReply(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", msg, details...)
}

// DailyQuota is the 429 RESOURCE_EXHAUSTED the Gemini API answers when the
// daily request quota of model is used up (quotaId …PerDay…), as the real
// API words it.
func DailyQuota(model string) modelserver.Reply {
	msg := "You exceeded your current quota, please check your plan and billing details. " +
		"For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n" +
		"* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 250, model: " + model
	return ErrorReply(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", msg,
		map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []any{map[string]any{
				"quotaMetric":     "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":         "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
				"quotaDimensions": map[string]any{"location": "global", "model": model},
				"quotaValue":      "250",
			}},
		},
		map[string]any{
			"@type": "type.googleapis.com/google.rpc.Help",
			"links": []any{map[string]any{"description": "Learn more about Gemini API quotas",
				"url": "https://ai.google.dev/gemini-api/docs/rate-limits"}},
		},
	)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
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
