package agentcli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"conch/backend/provider"
)

// request answers codex's approval requests through Conch's gate.
func (s *codexSession) request(ctx context.Context, method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "item/commandExecution/requestApproval":
		return s.approveCommand(ctx, params)
	case "item/fileChange/requestApproval":
		return s.approveFileChange(ctx, params)
	case "mcpServer/elicitation/request":
		return s.approveElicitation(ctx, params)
	}
	return nil, &rpcError{Code: rpcNoMethod, Message: "Conch does not answer " + method}
}

// approveCommand asks whether codex may run a command.
func (s *codexSession) approveCommand(ctx context.Context, params json.RawMessage) (any, *rpcError) {
	var p struct {
		ItemID  string `json:"itemId"`
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
	}
	cmd := unwrapShell(p.Command)
	detail := fmt.Sprintf("Run `%s` in %s?", cmd, tilde(orDefault(p.Cwd, s.req.Cwd)))
	if p.Reason != "" {
		detail = fmt.Sprintf("Run `%s` in %s (%s)?", cmd, tilde(orDefault(p.Cwd, s.req.Cwd)), p.Reason)
	}
	return map[string]any{"decision": s.decide(ctx, p.ItemID, provider.Action{Tool: "exec_command", Detail: detail, Effect: "command", Command: cmd})}, nil
}

// approveFileChange asks whether codex may apply the patch of an item it
// started.
func (s *codexSession) approveFileChange(ctx context.Context, params json.RawMessage) (any, *rpcError) {
	var p struct {
		ItemID string `json:"itemId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
	}
	s.mu.Lock()
	it := s.items[p.ItemID]
	s.mu.Unlock()
	a := provider.Action{Tool: "apply_patch", Detail: "Edit " + s.paths(it) + "?", Effect: "edit"}
	for _, ch := range it.Changes {
		a.Paths = append(a.Paths, ch.Path)
		if a.Write == nil {
			a.Write = codexWrite(relPath(s.req.Cwd, ch.Path), ch.Kind.Type, ch.Diff)
		}
	}
	if len(a.Paths) == 0 {
		// A change Conch cannot see cannot be checked against the folder.
		return map[string]any{"decision": "decline"}, nil
	}
	return map[string]any{"decision": s.decide(ctx, p.ItemID, a)}, nil
}

// approveElicitation asks whether another MCP server's tool may go on.
func (s *codexSession) approveElicitation(ctx context.Context, params json.RawMessage) (any, *rpcError) {
	var p struct {
		ServerName string `json:"serverName"`
		Message    string `json:"message"`
		Meta       struct {
			Tool string `json:"tool_name"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
	}
	a := provider.Action{Tool: p.ServerName + "." + p.Meta.Tool, Detail: orDefault(p.Message, "Allow "+p.ServerName+"?"), Effect: "network"}
	if s.decide(ctx, "", a) == "accept" {
		return map[string]any{"action": "accept", "content": map[string]any{}, "_meta": nil}, nil
	}
	return map[string]any{"action": "decline", "content": nil, "_meta": nil}, nil
}

// decide puts item's step to Conch's gate: accept, decline, or cancel when
// the run is being stopped.
func (s *codexSession) decide(ctx context.Context, item string, a provider.Action) string {
	if item != "" {
		s.mu.Lock()
		s.asked[item] = a.Detail
		s.mu.Unlock()
	}
	if s.req.Ask == nil {
		return "decline"
	}
	ok, err := s.req.Ask(ctx, a)
	switch {
	case err != nil:
		return "cancel"
	case ok:
		if item != "" {
			s.mu.Lock()
			s.allowed[item] = true
			s.mu.Unlock()
		}
		return "accept"
	}
	return "decline"
}

// codexWrite is one file's change in a Codex patch: a new file's text, a
// deleted one's, or the lines an update takes out and puts in (each
// hunk's context kept, so the pieces read as the file does).
func codexWrite(path, kind, diff string) *provider.Write {
	switch kind {
	case "add":
		return &provider.Write{Path: path, New: diff, Whole: true}
	case "delete":
		return &provider.Write{Path: path, Old: diff}
	case "update":
		var old, next strings.Builder
		hunk := false // past the first @@: "---" is a line taken out, not a header
		for _, line := range strings.SplitAfter(diff, "\n") {
			switch {
			case line == "", !hunk && (strings.HasPrefix(line, "---") || strings.HasPrefix(line, "+++")):
			case strings.HasPrefix(line, "@@"):
				if hunk {
					old.WriteString("…\n")
					next.WriteString("…\n")
				}
				hunk = true
			case strings.HasPrefix(line, "-"):
				old.WriteString(line[1:])
			case strings.HasPrefix(line, "+"):
				next.WriteString(line[1:])
			case strings.HasPrefix(line, " "):
				old.WriteString(line[1:])
				next.WriteString(line[1:])
			case strings.HasPrefix(line, `\`):
				// "\ No newline at end of file"
			default:
				old.WriteString(line)
				next.WriteString(line)
			}
		}
		return &provider.Write{Path: path, Old: old.String(), New: next.String()}
	}
	return nil
}
