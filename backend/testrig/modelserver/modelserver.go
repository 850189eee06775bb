// Package modelserver serves the model APIs that the coding-agent CLIs
// call (Anthropic Messages for Claude Code, OpenAI Responses for Codex,
// Gemini streamGenerateContent for Gemini CLI), and the OpenAI Chat
// Completions API that Conch's own openai provider calls, from a scripted
// brain, on loopback, in each API's real wire format: streamed SSE
// chunks, tool calls, usage, and error answers such as 429. Tests run the
// real CLIs and providers against it; it is the only fake, at the network
// edge Conch cannot reach.
package modelserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Turn is one request a client made, in a form common to the APIs.
type Turn struct {
	// Model is the model the CLI asked for.
	Model string
	// System is the system prompt (instructions), joined.
	System string
	// Messages are the conversation so far, oldest first.
	Messages []Message
	// Tools are the names of the tools the CLI offered the model.
	Tools []string
}

// Message is one message of a Turn.
type Message struct {
	// Role is "user", "assistant" or "tool" (a tool's result).
	Role string
	// Text is the message's text (a tool result's output).
	Text string
	// Calls are the tool calls of an assistant message.
	Calls []Call
	// CallID names the call a tool result answers.
	CallID string
}

// Call is a tool call, asked for by the model or seen in the history.
type Call struct {
	ID   string
	Name string
	// Args is the JSON object of its arguments.
	Args json.RawMessage
}

// Reply is what the brain answers a Turn with: text, tool calls, or an
// HTTP error (Status non-zero: Body is sent as it is, with Headers).
type Reply struct {
	Text    string
	Calls   []Call
	Status  int
	Body    string
	Headers map[string]string
	// OutputTokens, when non-zero, is the output token count the reply's
	// usage reports, for tests of spending; only chatcompletions reads it.
	OutputTokens int
}

// Brain scripts the model: it sees each turn and says what to answer.
type Brain func(Turn) Reply

// ContextBrain is a Brain that is also given the request's context, which
// ends when the client goes away, so that it can hold an answer back until
// the request is cancelled.
type ContextBrain func(context.Context, Turn) Reply

// Results are the tool results in a turn's messages, oldest first.
func (t Turn) Results() []Message {
	var out []Message
	for _, m := range t.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// FirstUser is the text of the first user message.
func (t Turn) FirstUser() string {
	for _, m := range t.Messages {
		if m.Role == "user" {
			return m.Text
		}
	}
	return ""
}

// Log keeps what a scripted server got, for the test to read: the turns
// its brain answered and every HTTP request (R is the server's own record
// of one). Safe for concurrent use; the zero value is ready. A server
// embeds it, so its Turns and Requests are the server's.
type Log[R any] struct {
	mu       sync.Mutex
	turns    []Turn
	requests []R
}

// KeepTurn records a turn the brain answered.
func (l *Log[R]) KeepTurn(t Turn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns = append(l.turns, t)
}

// KeepRequest records a request as it arrives; change, called later,
// changes the record kept (the status it was answered with).
func (l *Log[R]) KeepRequest(r R) (change func(func(*R))) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.requests)
	l.requests = append(l.requests, r)
	return func(f func(*R)) {
		l.mu.Lock()
		defer l.mu.Unlock()
		f(&l.requests[i])
	}
}

// Turns are the turns answered so far, oldest first.
func (l *Log[R]) Turns() []Turn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Turn(nil), l.turns...)
}

// Requests are all requests received so far, of any path, oldest first.
func (l *Log[R]) Requests() []R {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]R(nil), l.requests...)
}

// WriteStatus sends a Reply that has a Status, as an API's error answer:
// its Headers, JSON unless they say otherwise, and its Body as it is.
func WriteStatus(w http.ResponseWriter, r Reply) {
	for k, v := range r.Headers {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(r.Status)
	_, _ = io.WriteString(w, r.Body)
}

// ContentText is a message's content as text, as the OpenAI APIs send it:
// a JSON string, or a list of parts whose text is joined by newlines (a
// part without text, such as an image, is left out).
func ContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// Marshal is json.Marshal without escaping <, > and &, as the model APIs
// send JSON.
func Marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
