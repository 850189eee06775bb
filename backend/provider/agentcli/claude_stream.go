package agentcli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"conch/backend/provider"
)

// claudeHandler maps Claude Code's stream-json lines to events.
type claudeHandler struct {
	e   emitter
	cwd string
	srv *askServer // serves the CLI's questions and Conch's tools; nil when neither

	lastID   string                 // the message the last text came from
	streamID string                 // the message being streamed, from its message_start
	wrote    bool                   // some text was sent
	streamed map[string]bool        // messages whose text came as partial messages
	uses     map[string]claudeBlock // tool uses waiting for their results, by id
	resetsAt time.Time
	apiError string // an assistant frame's error, e.g. rate_limit
	result   *claudeResult
}

// claudeBlock is one block of a message's content: text, a tool use, or a
// tool's result.
type claudeBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// A tool_result's.
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
}

// claudeLine is one stream-json line; which fields are set depends on
// Type.
type claudeLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Message struct {
		ID      string          `json:"id"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	Error           string  `json:"error"`
	RateLimitInfo   struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
	} `json:"rate_limit_info"`
	// A stream_event's: one event of the model's streamed answer.
	Event struct {
		Type    string `json:"type"`
		Message struct {
			ID string `json:"id"`
		} `json:"message"` // a message_start's
		ContentBlock struct {
			Type string `json:"type"`
		} `json:"content_block"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
	} `json:"event"`
	APIMessageID string `json:"api_message_id"`
	// A user line's: who allowed or refused each tool it answers.
	ToolResultMeta []struct {
		ID                 string `json:"id"`
		PermissionDecision struct {
			Decision string `json:"decision"`
		} `json:"permission_decision"`
		NonExecutionKind string `json:"non_execution_kind"`
	} `json:"tool_result_meta"`
}

// blocks reads a message's content: blocks, or a plain string.
func (l claudeLine) blocks() []claudeBlock {
	var bs []claudeBlock
	if json.Unmarshal(l.Message.Content, &bs) == nil {
		return bs
	}
	return nil
}

// claudeResult is the result line that ends a run.
type claudeResult struct {
	Subtype      string  `json:"subtype"`
	IsError      bool    `json:"is_error"`
	Result       string  `json:"result"`
	StopReason   string  `json:"stop_reason"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	Usage        struct {
		Input       int `json:"input_tokens"`
		Output      int `json:"output_tokens"`
		CacheRead   int `json:"cache_read_input_tokens"`
		CacheCreate int `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	Errors         []any `json:"errors"`
	APIErrorStatus any   `json:"api_error_status"`
}

// line reads one stream-json line: the reply's text as it streams, or
// whole when it was not streamed; the tool uses and their results; the
// CLI's retries and rate limits; the result.
func (h *claudeHandler) line(raw []byte) error {
	var l claudeLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return fmt.Errorf("%w: claude: %v", provider.ErrProtocol, err)
	}
	// A subagent's words and steps are its report to Claude, not the reply.
	sub := l.ParentToolUseID != nil && *l.ParentToolUseID != ""
	switch l.Type {
	case "stream_event":
		if !sub {
			h.streamEvent(l)
		}
	case "assistant":
		h.assistant(l, sub)
	case "user":
		h.results(l)
	case "system":
		if l.Subtype == "api_retry" {
			h.e.notice(claudeRetry(raw))
		}
	case "rate_limit_event":
		if l.RateLimitInfo.Status == "rejected" && l.RateLimitInfo.ResetsAt > 0 {
			h.resetsAt = time.Unix(l.RateLimitInfo.ResetsAt, 0)
		}
	case "result":
		var r claudeResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%w: claude result: %v", provider.ErrProtocol, err)
		}
		h.result = &r
		h.e.usage(provider.Usage{
			InputTokens:      r.Usage.Input,
			OutputTokens:     r.Usage.Output,
			CacheReadTokens:  r.Usage.CacheRead,
			CacheWriteTokens: r.Usage.CacheCreate,
			CostUSD:          r.TotalCostUSD,
		})
	}
	return nil
}

// streamEvent sends the text of one event of the model's streamed answer.
func (h *claudeHandler) streamEvent(l claudeLine) {
	// Claude Code 2.1.197 names the message only in its
	// message_start; later ones give every event its api_message_id.
	if l.Event.Type == "message_start" {
		h.streamID = l.Event.Message.ID
	}
	id := orDefault(l.APIMessageID, h.streamID)
	switch l.Event.Type {
	case "content_block_start":
		if l.Event.ContentBlock.Type == "text" && h.wrote && id != h.lastID {
			// The messages of one reply do not run together.
			h.e.text("\n\n")
			h.lastID = id
		}
	case "content_block_delta":
		if l.Event.Delta.Type == "text_delta" && l.Event.Delta.Text != "" {
			h.streamed[id] = true
			h.lastID, h.wrote = id, true
			h.e.text(l.Event.Delta.Text)
		}
	}
}

// assistant reads a whole assistant message: its text, unless it came
// streamed, and its tool uses, kept until their results come. sub says
// it is a subagent's.
func (h *claudeHandler) assistant(l claudeLine, sub bool) {
	if l.Error != "" {
		h.apiError = l.Error
	}
	// A frame the CLI made up to carry an error (a limit, a login)
	// is reported once, as the result's error, not as reply text.
	synthetic := l.Error != "" || l.Message.Model == "<synthetic>"
	for _, b := range l.blocks() {
		switch b.Type {
		case "text":
			if sub || synthetic || b.Text == "" || h.streamed[l.Message.ID] {
				continue
			}
			text := b.Text
			if h.wrote && l.Message.ID != h.lastID {
				text = "\n\n" + text
			}
			h.lastID, h.wrote = l.Message.ID, true
			h.e.text(text)
		case "tool_use":
			if !sub && b.ID != "" {
				h.uses[b.ID] = b // shown once it has run, or was refused
			}
		}
	}
}

// results shows the steps whose tools have now run, or were refused.
func (h *claudeHandler) results(l claudeLine) {
	rejected := map[string]bool{}
	for _, m := range l.ToolResultMeta {
		if m.PermissionDecision.Decision == "reject" || m.NonExecutionKind != "" {
			rejected[m.ID] = true
		}
	}
	for _, b := range l.blocks() {
		if b.Type != "tool_result" {
			continue
		}
		use, ok := h.uses[b.ToolUseID]
		if !ok {
			continue
		}
		delete(h.uses, b.ToolUseID)
		if strings.HasPrefix(use.Name, "mcp__conch__") {
			continue // Conch's own tools show as their calls
		}
		a := claudeAction(use.Name, use.Input, h.cwd)
		switch {
		case rejected[b.ToolUseID] || h.srv.wasRefused(b.ToolUseID):
			h.e.step(declinedStep(a.Detail))
		case b.IsError:
			h.e.emit(provider.Event{Kind: provider.StepEvent, Text: claudeStep(use.Name, use.Input, h.cwd) + " (failed)", Action: &a})
		default:
			h.e.emit(provider.Event{Kind: provider.StepEvent, Text: claudeStep(use.Name, use.Input, h.cwd), Action: &a})
		}
	}
}

// release stops the question server once the CLI has exited.
func (h *claudeHandler) release() {
	h.srv.Close()
}

func (h *claudeHandler) finish(exit exitStatus) provider.Event {
	r := h.result
	if r == nil {
		if exit.code != 0 {
			return provider.Event{Kind: provider.ErrorEvent, Err: exit.failure("claude")}
		}
		return provider.Event{Kind: provider.ErrorEvent, Err: fmt.Errorf("%w: claude exited without a result", provider.ErrProtocol)}
	}
	if r.IsError || strings.HasPrefix(r.Subtype, "error") {
		return provider.Event{Kind: provider.ErrorEvent, Err: h.resultError(r)}
	}
	stop := r.StopReason
	if stop == "" {
		stop = r.Subtype
	}
	return provider.Event{Kind: provider.DoneEvent, StopReason: stop}
}
