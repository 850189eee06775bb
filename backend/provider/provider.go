// Package provider is what answers a chat: the interface every kind of
// provider implements (model APIs, coding-agent CLIs), their events and
// their errors. One subpackage per kind (openai, anthropic, agentcli); the
// built-in shell runs tasks through backend/taskrun instead.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"conch/backend/procmark"
	"conch/backend/task"
)

// Category says what kind of helper a provider is, for the person and for
// the assistant's system prompt.
type Category string

const (
	// CodingAgent runs its own tools (Claude Code, Codex, Gemini CLI).
	CodingAgent Category = "coding-agent"
	// LocalModel is a model on this computer (Ollama, LM Studio, llama.cpp).
	LocalModel Category = "local-model"
	// ChatOnly is a hosted model reached over an API.
	ChatOnly Category = "chat-only"
	// BuiltInShell is the shell: each message runs as one bash command.
	BuiltInShell Category = "shell"
)

// Models are a provider's models.
type Models struct {
	// Default is used when a chat names none.
	Default string `json:"default"`
	// Fast is the provider's small model (delegate parts use it by default).
	Fast string `json:"fast"`
	// List is every model the provider offers now.
	List []string `json:"list"`
}

// Info describes a provider as it stands now.
type Info struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Kind     string   `json:"kind"` // openai, anthropic, claude-code, codex, gemini
	Category Category `json:"category"`
	Ready    bool     `json:"ready"`
	// Reason says why it is not ready, in the provider's own words when it
	// gave any ("Not logged in · Please run /login").
	Reason string `json:"reason,omitempty"`
	Models Models `json:"models"`
	// CanAsk reports whether it stops to ask before each side effect (model
	// APIs: Conch runs the tools, so yes; CLIs: only when their asks are
	// routed to Conch). One that cannot is never handed a task or helper.
	CanAsk bool `json:"canAsk"`
	// Version is a coding-agent CLI's version ("2.1.332"), when it could
	// tell; empty for the rest.
	Version string `json:"version,omitempty"`
}

// Role is who said a message.
type Role string

const (
	User      Role = "user"
	Assistant Role = "assistant"
	// ToolRole carries a tool's result back to the model.
	ToolRole Role = "tool"
)

// ToolCall is the model asking Conch to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Message is one turn of the conversation sent to a provider.
type Message struct {
	Role Role   `json:"role"`
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID and IsError are set on a tool result.
	ToolCallID string `json:"toolCallId,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
}

// ToolSpec declares a tool to the model; Schema is a JSON Schema object.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Request is one provider call: the whole conversation so far.
type Request struct {
	Model    string
	System   string
	Messages []Message
	Tools    []ToolSpec
	// Mode and Cwd matter to coding-agent CLIs, which run their own tools.
	Mode task.Mode
	Cwd  string
	// Ask puts a step a coding agent wants to take to Conch's gate: the
	// chat's mode and taint decide whether it runs at once, asks the
	// person, or is refused. It reports whether the step may run (nil:
	// none may; the CLI then runs in its safest mode).
	Ask func(ctx context.Context, a Action) (bool, error)
	// Call runs one of Tools for a coding agent that called it over
	// Conch's MCP server (nil: it gets none): the output, and whether the
	// call failed. An API model's calls come back as ToolCallEvents
	// instead.
	Call func(ctx context.Context, name string, args json.RawMessage) (string, bool)
	// Mark is what a CLI process (and so every tool it runs) carries, so
	// healing after a crash finds them and nothing else.
	Mark procmark.Mark
	// Env holds KEY=VALUE pairs a CLI (and so every tool it runs) gets on
	// top of its own environment (a helper's CONCH_PORT).
	Env []string
}

// Action is a step a coding agent wants to take with one of its own tools.
type Action struct {
	// Tool is the CLI's tool ("Bash", "Write", "shell").
	Tool string
	// Detail is what the person reads when asked ("Run `ls` in ~/proj").
	Detail string
	// Effect is what it may change: "none", "edit", "command" or
	// "network" (the host tools' effects); unknown counts as network.
	Effect string
	// Command is the shell command of a command step, for the guard.
	Command string
	// URL is the address a network step reaches, for the guard.
	URL string
	// Paths are the files an edit step writes, absolute; one outside the
	// chat's folder is refused whatever the mode.
	Paths []string
	// Write is what an edit step writes, when the CLI says, so the person
	// sees the change before allowing it (nil: it did not say).
	Write *Write
}

// Write is the change an edit step makes to one file: the whole of it
// (Whole: New is all the file will hold, and Conch reads what it holds
// now), or the piece Old that New replaces.
type Write struct {
	// Path is the file, as the person reads it (relative to the folder).
	Path     string
	Old, New string
	Whole    bool
}

// EventKind names a streamed event.
type EventKind string

const (
	// TextDelta is a piece of the assistant's reply (Text).
	TextDelta EventKind = "text"
	// ToolCallEvent is a complete tool call for Conch to run (Call).
	ToolCallEvent EventKind = "tool-call"
	// StepEvent is something a coding agent did itself, past tense (Text),
	// e.g. "Read go.mod", "Ran go test ./...".
	StepEvent EventKind = "step"
	// NoticeEvent is something the person should know while they wait,
	// e.g. "Codex is retrying after a rate limit (2 of 5)" (Text).
	NoticeEvent EventKind = "notice"
	// UsageEvent reports tokens used so far (Usage; later ones overwrite).
	UsageEvent EventKind = "usage"
	// DoneEvent ends the stream normally (StopReason).
	DoneEvent EventKind = "done"
	// ErrorEvent ends the stream with Err (see the errors below).
	ErrorEvent EventKind = "error"
)

// Usage is what a call used, for the budget.
type Usage struct {
	InputTokens      int     `json:"inputTokens"`
	OutputTokens     int     `json:"outputTokens"`
	CacheReadTokens  int     `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int     `json:"cacheWriteTokens,omitempty"`
	CostUSD          float64 `json:"costUsd,omitempty"` // when the provider says (CLIs)
}

// Event is one thing a stream says. The last event is DoneEvent or
// ErrorEvent, then the channel closes.
type Event struct {
	Kind EventKind
	Text string
	// Action is what a StepEvent's step did, when known, for the guard:
	// a step the CLI ran without asking may still taint the chat.
	Action     *Action
	Call       *ToolCall
	Usage      *Usage
	StopReason string
	Err        error
}

// Provider is one connected provider.
type Provider interface {
	// Info says what it is and whether it is ready now; it may probe
	// (list models, run `claude auth status`) and should be quick.
	Info(ctx context.Context) Info
	// Stream sends req and streams the reply until a DoneEvent or an
	// ErrorEvent, closing the channel after it. Cancelling ctx stops the
	// call at once (the stream ends with ctx's error). An error returned
	// here means nothing was sent.
	Stream(ctx context.Context, req Request) (<-chan Event, error)
}

// Errors a provider reports; wrap them (fmt.Errorf("...: %w", ErrX)) or
// return a *LimitError, and callers test with errors.Is / errors.As.
var (
	// ErrLimit is a usage limit or quota: a 429 with such a reason, a CLI's
	// limit message. Not retried; another provider may carry on.
	ErrLimit = errors.New("usage limit reached")
	// ErrOverload is transient (Anthropic 529, a rate limit that says to
	// try again shortly).
	ErrOverload = errors.New("provider overloaded")
	// ErrNotReady: not running, not installed, model not pulled.
	ErrNotReady = errors.New("provider not ready")
	// ErrAuth: a missing or refused key, a logged-out CLI.
	ErrAuth = errors.New("provider refused the credentials")
	// ErrProtocol: the provider sent something that cannot be read.
	ErrProtocol = errors.New("provider sent something unreadable")
)

// LimitError is ErrLimit with what is known of it.
type LimitError struct {
	// Until is when the limit resets, if the provider said.
	Until time.Time
	// Message is the provider's own words.
	Message string
}

func (e *LimitError) Error() string {
	if !e.Until.IsZero() {
		return fmt.Sprintf("usage limit reached until %s: %s", e.Until.Format(time.RFC3339), e.Message)
	}
	return "usage limit reached: " + e.Message
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// Registry gives the connected providers by id.
type Registry interface {
	// Provider returns the provider with id, if it is connected.
	Provider(id string) (Provider, bool)
	// IDs lists the connected providers' ids, sorted.
	IDs() []string
}

// Fixed is a Registry that never changes: a map from id to provider.
type Fixed map[string]Provider

// Provider returns the provider with id.
func (f Fixed) Provider(id string) (Provider, bool) {
	p, ok := f[id]
	return p, ok
}

// IDs lists the ids, sorted.
func (f Fixed) IDs() []string {
	ids := make([]string, 0, len(f))
	for id := range f {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
