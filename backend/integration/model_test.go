package integration

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The scripted model is a real HTTP server on loopback that speaks the
// OpenAI Chat Completions wire format as a server does (SSE chunks, a tool
// call's arguments split across chunks, usage last), so `conch serve`
// talks to it through its real openai provider. It answers from the
// transcript alone, so a task that resumes after a crash carries on where
// its transcript says it stands, and it keeps every request it got.

// scriptedModel is the model id the scripted server lists.
const scriptedModel = "crash-model"

// wireCall is one tool call in an assistant message of a request.
type wireCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wireMessage is one message of a chat request, as the server reads it.
type wireMessage struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"`
	ToolCallID string     `json:"tool_call_id"`
	ToolCalls  []wireCall `json:"tool_calls"`
}

func (m wireMessage) text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case nil:
		return ""
	}
	b, _ := json.Marshal(m.Content)
	return string(b)
}

// request is one chat request the server got.
type request struct {
	System   string
	Messages []wireMessage
	Tools    []string
}

// task reports whether the request comes from a task's own chat.
func (r request) task() bool { return strings.Contains(r.System, "handed off from another chat") }

// marked is the [crash-…] marker of the first user message: which task (or
// which parent chat's errand) the request is about.
func (r request) marker() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			if mm := markerRe.FindStringSubmatch(m.text()); mm != nil {
				return mm[1]
			}
			return ""
		}
	}
	return ""
}

var markerRe = regexp.MustCompile(`\[((?:delegate |background )?crash-[0-9a-z-]+)\]`)

// calls are the tool calls of the request's assistant messages, oldest first.
func (r request) calls() []wireCall {
	var out []wireCall
	for _, m := range r.Messages {
		out = append(out, m.ToolCalls...)
	}
	return out
}

// answered is the names of the tools whose calls have a result.
func (r request) answered() map[string]bool {
	names := map[string]string{}
	for _, c := range r.calls() {
		names[c.ID] = c.Function.Name
	}
	out := map[string]bool{}
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out[names[m.ToolCallID]] = true
		}
	}
	return out
}

func (r request) transcript() string {
	b, _ := json.Marshal(r.Messages)
	return string(b)
}

// reply is what the script says: text, or one tool call.
type reply struct {
	text string
	call string // tool name
	args any
}

// chatCommand is what a task's model runs: numbered lines, slowly, into
// the task's log.
const chatCommand = "for i in $(seq 1 25); do echo chat-$i; sleep 0.02; done"

// script is the whole model. A task (or helper) writes <marker>.txt, runs
// chatCommand, then reports; a parent chat hands its errand off once (a
// delegate of two helpers in worktrees, or a background task) and
// afterwards only acknowledges.
func script(r request) reply {
	mk := r.marker()
	if r.task() {
		done := r.answered()
		switch {
		case !done["write_file"]:
			return reply{call: "write_file", args: map[string]string{"path": mk + ".txt", "content": mk + "\n"}}
		case !done["run_command"]:
			return reply{call: "run_command", args: map[string]string{"command": chatCommand}}
		}
		return reply{call: "report_result", args: map[string]string{"summary": mk + " is done."}}
	}
	called := map[string]bool{}
	for _, c := range r.calls() {
		called[c.Function.Name] = true
	}
	switch {
	case strings.HasPrefix(mk, "delegate ") && !called["delegate"]:
		tag := strings.TrimPrefix(mk, "delegate ")
		var parts []map[string]any
		for _, p := range []string{"a", "b"} {
			parts = append(parts, map[string]any{"title": "Part " + p + " of " + tag,
				"instructions": fmt.Sprintf("Write the file and count. [%s-%s]", tag, p), "worktree": true})
		}
		return reply{call: "delegate", args: map[string]any{"parts": parts}}
	case strings.HasPrefix(mk, "background ") && !called["start_background_task"]:
		tag := strings.TrimPrefix(mk, "background ")
		return reply{call: "start_background_task", args: map[string]string{
			"text": "Write the file and count. [" + tag + "]", "title": tag}}
	}
	return reply{text: "Noted: all of it is in hand."}
}

// modelServer serves script over loopback and keeps every request.
type modelServer struct {
	srv  *http.Server
	base string // http://127.0.0.1:PORT/v1

	mu   sync.Mutex
	seen []request
	rng  *rand.Rand
	n    int
}

func startModel(t *testing.T, seed uint64) *modelServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms := &modelServer{base: "http://" + ln.Addr().String() + "/v1", rng: rand.New(rand.NewPCG(seed, 7))}
	ms.srv = &http.Server{Handler: http.HandlerFunc(ms.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ms.srv.Serve(ln) }()
	t.Cleanup(func() { _ = ms.srv.Close() })
	return ms
}

// last is the newest request about marker mk from a task's chat.
func (ms *modelServer) last(mk string) (request, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for i := len(ms.seen) - 1; i >= 0; i-- {
		if ms.seen[i].task() && ms.seen[i].marker() == mk {
			return ms.seen[i], true
		}
	}
	return request{}, false
}

func (ms *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/models") {
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list",
			"data": []map[string]string{{"id": scriptedModel, "object": "model"}}})
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Model    string        `json:"model"`
		Stream   bool          `json:"stream"`
		Messages []wireMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req request
	for _, m := range body.Messages {
		if m.Role == "system" {
			req.System += m.text()
			continue
		}
		req.Messages = append(req.Messages, m)
	}
	for _, tl := range body.Tools {
		req.Tools = append(req.Tools, tl.Function.Name)
	}
	ms.mu.Lock()
	ms.seen = append(ms.seen, req)
	ms.n++
	nth := ms.n // call ids stay apart across requests and restarts
	// A model takes a moment to think and to stream, so a kill lands
	// before, during and after its answers.
	think := time.Duration(20+ms.rng.IntN(130)) * time.Millisecond
	ms.mu.Unlock()
	select {
	case <-time.After(think):
	case <-r.Context().Done():
		return
	}
	ans := script(req)

	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	chunk := func(delta any, finish any) bool {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", nth), "object": "chat.completion.chunk",
			"model": body.Model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		fl.Flush()
		time.Sleep(3 * time.Millisecond)
		return r.Context().Err() == nil
	}
	if ans.call != "" {
		args, _ := json.Marshal(ans.args)
		half := len(args) / 2
		ok := chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0,
			"id": fmt.Sprintf("call_%d", nth), "type": "function", "function": map[string]any{"name": ans.call, "arguments": ""}}}}, nil) &&
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args[:half])}}}}, nil) &&
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args[half:])}}}}, nil) &&
			chunk(map[string]any{}, "tool_calls")
		if !ok {
			return
		}
	} else {
		if !chunk(map[string]any{"role": "assistant", "content": ""}, nil) {
			return
		}
		for _, piece := range strings.SplitAfter(ans.text, " ") {
			if !chunk(map[string]any{"content": piece}, nil) {
				return
			}
		}
		if !chunk(map[string]any{}, "stop") {
			return
		}
	}
	b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", nth), "object": "chat.completion.chunk", "choices": []any{},
		"usage": map[string]int{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	fl.Flush()
}
