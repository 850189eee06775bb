package agentcli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
)

// mcpVersion is the protocol version answered when the client asks for
// one this server does not know.
const mcpVersion = "2025-06-18"

// mcpVersions are the protocol versions this server can speak: it uses
// nothing that differs between them.
var mcpVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// declined is what Claude is told when the person says no.
const declined = "The person declined."

// handle serves one message and returns the HTTP status and the reply
// (nil for a notification or a response, which get 202 and no body).
func (s *askServer) handle(ctx context.Context, body []byte) (int, *rpcReply) {
	m, bad := decodeRPC(body)
	if bad != nil {
		return http.StatusBadRequest, bad
	}
	if len(m.ID) == 0 || m.Method == "" {
		if m.Method == "notifications/cancelled" {
			s.cancelCall(m.Params)
		}
		return http.StatusAccepted, nil
	}
	result, rerr := s.call(ctx, m)
	if rerr != nil {
		return http.StatusOK, &rpcReply{JSONRPC: "2.0", ID: m.ID, Error: rerr}
	}
	return http.StatusOK, &rpcReply{JSONRPC: "2.0", ID: m.ID, Result: result}
}

// approveSchema is the approve tool's input, as Claude Code sends it.
var approveSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"tool_name":   map[string]any{"type": "string"},
		"input":       map[string]any{"type": "object"},
		"tool_use_id": map[string]any{"type": "string"},
	},
	"required": []string{"tool_name", "input"},
}

func (s *askServer) call(ctx context.Context, m rpcMessage) (any, *rpcError) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		version := mcpVersion
		if mcpVersions[p.ProtocolVersion] {
			version = p.ProtocolVersion
		}
		return map[string]any{
			"protocolVersion": version,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "conch", "version": "1"},
		}, nil
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		var tools []any
		if s.ask != nil {
			tools = append(tools, map[string]any{
				"name":        "approve",
				"description": "Asks the person in Conch whether Claude may use a tool.",
				"inputSchema": approveSchema,
			})
		}
		for _, t := range s.tools {
			schema := t.Schema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "inputSchema": schema})
		}
		if tools == nil {
			tools = []any{}
		}
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Name == "approve" && s.ask != nil {
			return s.approve(ctx, m)
		}
		return s.callTool(ctx, m)
	}
	return nil, &rpcError{Code: rpcNoMethod, Message: "method not found: " + m.Method}
}

// approve puts Claude's question to the person and says what they chose,
// in the shape --permission-prompt-tool wants: text holding
// {"behavior":"allow","updatedInput":…} or {"behavior":"deny","message":…}.
func (s *askServer) approve(ctx context.Context, m rpcMessage) (any, *rpcError) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			ToolName  string          `json:"tool_name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
		} `json:"arguments"`
		Meta struct {
			ToolUseID string `json:"claudecode/toolUseId"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "tools/call takes name and arguments"}
	}
	useID := orDefault(p.Arguments.ToolUseID, p.Meta.ToolUseID)
	if p.Name != "approve" {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "unknown tool: " + p.Name}
	}
	input := bytes.TrimSpace(p.Arguments.Input)
	if len(input) == 0 || string(input) == "null" {
		input = []byte("{}")
	}
	if p.Arguments.ToolName == "" || input[0] != '{' {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "approve takes tool_name and an input object"}
	}
	// The ask ends when the client goes or cancels this call, or when the
	// server closes (ctx comes from s.ctx).
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.track(m.ID, cancel)()

	allowed, err := s.ask(actx, claudeAction(p.Arguments.ToolName, input, s.cwd))
	var answer any
	if actx.Err() == nil && (err != nil || !allowed) {
		s.refuse(useID)
	}
	switch {
	case actx.Err() != nil:
		return nil, &rpcError{Code: rpcCancelled, Message: "request cancelled"}
	case err != nil:
		answer = map[string]any{"behavior": "deny", "message": "Conch could not ask the person: " + err.Error()}
	case allowed:
		answer = struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
		}{"allow", input}
	default:
		answer = map[string]any{"behavior": "deny", "message": declined}
	}
	text, merr := json.Marshal(answer)
	if merr != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "bad input: " + merr.Error()}
	}
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}}, nil
}

// refuse records that the tool use id was answered deny.
func (s *askServer) refuse(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	s.refused[id] = true
	s.mu.Unlock()
}

// wasRefused reports whether this server answered deny to the tool use
// id; the answer reaches the CLI before the tool's result comes out of it.
func (s *askServer) wasRefused(id string) bool {
	if s == nil || id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[id]
}

// callTool runs one of Conch's tools for the CLI: the result is its text,
// isError when it failed (a refusal, a declined question, bad arguments),
// which the model reads as it would any tool's error.
func (s *askServer) callTool(ctx context.Context, m rpcMessage) (any, *rpcError) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "tools/call takes name and arguments"}
	}
	known := false
	for _, t := range s.tools {
		known = known || t.Name == p.Name
	}
	if !known || s.run == nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "unknown tool: " + p.Name}
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.track(m.ID, cancel)()
	out, failed := s.run(cctx, p.Name, args)
	if cctx.Err() != nil {
		return nil, &rpcError{Code: rpcCancelled, Message: "request cancelled"}
	}
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": out}}, "isError": failed}, nil
}

// track registers a call in flight so notifications/cancelled can end it;
// the returned func forgets it.
func (s *askServer) track(id json.RawMessage, cancel context.CancelFunc) func() {
	key := idKey(id)
	call := &pendingCall{cancel}
	s.mu.Lock()
	s.calls[key] = call
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		// A client that reused the id has replaced it; leave that one.
		if s.calls[key] == call {
			delete(s.calls, key)
		}
		s.mu.Unlock()
	}
}

// pendingCall is a call waiting: for the person, or for a tool to end.
type pendingCall struct {
	cancel context.CancelFunc
}

// cancelCall ends the ask of the call a notifications/cancelled names.
func (s *askServer) cancelCall(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if call := s.calls[idKey(p.RequestID)]; call != nil {
		call.cancel()
	}
}
