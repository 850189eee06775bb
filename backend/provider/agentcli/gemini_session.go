package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"conch/backend/provider"
)

// geminiSession is one prompt of one ACP session.
type geminiSession struct {
	req provider.Request
	srv *askServer
	e   emitter

	attempts int // general.maxAttempts: tries of each model call

	mu      sync.Mutex
	failing string                // the attempt stderr says failed, while it says why
	why     string                // what it says
	calls   map[string]geminiCall // tool calls seen, by toolCallId
	wrote   bool                  // some text was sent
	between bool                  // a tool ran since the last text
}

// drive runs the prompt: the handshake, a session in the folder with
// Conch's tools, and one prompt of the conversation, whose answer says
// how it ended.
func (s *geminiSession) drive(ctx context.Context, r *rpcRun) (string, error) {
	defer s.srv.Close()
	if err := r.call(ctx, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "conch", "title": "Conch", "version": "1"},
	}, nil); err != nil {
		return "", geminiCallError(err)
	}
	servers := []any{}
	if s.srv != nil {
		servers = append(servers, map[string]any{"type": "http", "name": "conch", "url": s.srv.url, "headers": []any{}})
	}
	var session struct {
		SessionID string `json:"sessionId"`
	}
	if err := r.call(ctx, "session/new", map[string]any{"cwd": s.req.Cwd, "mcpServers": servers}, &session); err != nil {
		return "", geminiCallError(err)
	}
	var done struct {
		StopReason string `json:"stopReason"`
		Meta       struct {
			Quota struct {
				Tokens struct {
					Input  int `json:"input_tokens"`
					Output int `json:"output_tokens"`
				} `json:"token_count"`
			} `json:"quota"`
		} `json:"_meta"`
	}
	text := prompt(s.req)
	if err := r.call(ctx, "session/prompt", map[string]any{"sessionId": session.SessionID,
		"prompt": []any{map[string]any{"type": "text", "text": text}}}, &done); err != nil {
		return "", geminiCallError(err)
	}
	t := done.Meta.Quota.Tokens
	s.e.usage(provider.Usage{InputTokens: t.Input, OutputTokens: t.Output})
	switch done.StopReason {
	case "end_turn", "":
		return "end_turn", nil
	case "cancelled":
		return "", errors.New("gemini: the prompt was cancelled")
	case "max_turn_requests":
		return "", errors.New("gemini stopped: it reached its turn limit")
	case "max_tokens":
		return "", errors.New("gemini stopped: the conversation no longer fits its context")
	}
	return done.StopReason, nil
}

// notify reads the session's updates: the reply's text and its tool calls.
func (s *geminiSession) notify(method string, params json.RawMessage) error {
	if method != "session/update" {
		return nil
	}
	var p struct {
		Update struct {
			Kind    string          `json:"sessionUpdate"`
			Content json.RawMessage `json:"content"` // a block, or a tool's list
		} `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	switch p.Update.Kind {
	case "agent_message_chunk":
		var block struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(p.Update.Content, &block)
		text := block.Text
		if block.Type != "text" || text == "" || strings.HasPrefix(text, "[MODE_UPDATE]") {
			return nil
		}
		s.mu.Lock()
		// The messages of one reply do not run together: a tool between
		// two pieces of text starts a new one.
		if s.wrote && s.between {
			text = "\n\n" + text
		}
		s.wrote, s.between = true, false
		s.mu.Unlock()
		s.e.text(text)
	case "tool_call", "tool_call_update":
		s.callUpdate(params)
	}
	return nil
}

// callUpdate keeps what a session/update says of a tool call, and shows
// the call once it has run.
func (s *geminiSession) callUpdate(params json.RawMessage) {
	var u struct {
		Update geminiCall `json:"update"`
	}
	if json.Unmarshal(params, &u) != nil {
		return
	}
	s.mu.Lock()
	c := s.calls[u.Update.ToolCallID]
	c.ToolCallID, c.Status = u.Update.ToolCallID, u.Update.Status
	if u.Update.Title != "" {
		c.Title = u.Update.Title
	}
	if u.Update.Kind != "" {
		c.Kind = u.Update.Kind
	}
	if len(u.Update.Locations) > 0 {
		c.Locations = u.Update.Locations
	}
	s.calls[c.ToolCallID] = c
	s.between = true
	s.mu.Unlock()
	if c.Status == "completed" || c.Status == "failed" {
		s.stepDone(c)
	}
}

// stepDone shows a call that has run.
func (s *geminiSession) stepDone(c geminiCall) {
	if strings.HasPrefix(c.tool(), "mcp_conch_") {
		return // Conch's own tools show as their calls
	}
	a := s.action(c)
	text := geminiStep(c, s.req.Cwd)
	if c.Status == "failed" {
		text += " (failed)"
	}
	s.e.emit(provider.Event{Kind: provider.StepEvent, Text: text, Action: &a})
}

// request answers the CLI's permission requests through Conch's gate.
func (s *geminiSession) request(ctx context.Context, method string, params json.RawMessage) (any, *rpcError) {
	if method != "session/request_permission" {
		return nil, &rpcError{Code: rpcNoMethod, Message: "Conch does not answer " + method}
	}
	var p struct {
		ToolCall geminiCall `json:"toolCall"`
		Options  []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
	}
	c := p.ToolCall
	s.mu.Lock()
	s.calls[c.ToolCallID] = c
	s.mu.Unlock()
	pick := func(kind, fallback string) any {
		for _, o := range p.Options {
			if o.Kind == kind {
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.OptionID}}
			}
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": fallback}}
	}
	// Conch's own tools pass its gate when they run.
	if strings.HasPrefix(c.tool(), "mcp_conch_") {
		return pick("allow_once", "proceed_once"), nil
	}
	a := s.action(c)
	ok := false
	if s.req.Ask != nil {
		var err error
		if ok, err = s.req.Ask(ctx, a); err != nil {
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
		}
	}
	if ok {
		return pick("allow_once", "proceed_once"), nil
	}
	// A declined call gets no update of its own: it shows here.
	s.mu.Lock()
	s.between = true
	s.mu.Unlock()
	s.e.step(declinedStep(a.Detail))
	return pick("reject_once", "cancel"), nil
}

func (s *geminiSession) failure(exit exitStatus) error { return exit.failure("gemini") }
