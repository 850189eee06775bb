package responses

import (
	"encoding/json"
	"strings"

	"conch/backend/testrig/modelserver"
)

// toolKind is how a tool offered by name is to be called: Type is
// "function", "custom" (freeform), "tool_search"…; Namespace and Name are
// those of a tool inside a namespace (MCP tools: mcp__server).
type toolKind struct {
	Type, Namespace, Name string
}

// qualified is the name a Turn gives a tool inside a namespace:
// namespace__name, the flat name Codex used before namespaces
// (mcp__conch__ask_user).
func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return strings.TrimSuffix(ns, "__") + "__" + name
}

// decode reads a request into a Turn and how to call each tool offered,
// by the name the Turn gives it. Tools found by a tool_search call in
// the history are offered too.
func decode(req request) (modelserver.Turn, map[string]toolKind) {
	d := &decoder{turn: modelserver.Turn{Model: req.Model}, kinds: map[string]toolKind{}}
	if req.Instructions != "" {
		d.system = append(d.system, req.Instructions)
	}
	d.addTools(req.Tools, "")
	for _, raw := range req.Input {
		d.item(raw)
	}
	d.turn.System = strings.Join(d.system, "\n\n")
	return d.turn, d.kinds
}

// decoder gathers a Turn from a request: the tools offered, then the
// input items in order.
type decoder struct {
	turn   modelserver.Turn
	system []string
	kinds  map[string]toolKind
}

// addTools offers ts, those of a namespace by their qualified names.
func (d *decoder) addTools(ts []tool, ns string) {
	for _, t := range ts {
		var name string
		switch {
		case t.Type == "namespace":
			d.addTools(t.Tools, t.Name)
			continue
		case t.Name != "":
			name = qualified(ns, t.Name)
		default: // web_search, tool_search and the like
			name = t.Type
		}
		if _, dup := d.kinds[name]; !dup {
			d.turn.Tools = append(d.turn.Tools, name)
		}
		d.kinds[name] = toolKind{Type: t.Type, Namespace: ns, Name: t.Name}
	}
}

// call adds c to the assistant's last message, or starts one with it.
func (d *decoder) call(c modelserver.Call) {
	msgs := &d.turn.Messages
	if n := len(*msgs); n > 0 && (*msgs)[n-1].Role == "assistant" {
		(*msgs)[n-1].Calls = append((*msgs)[n-1].Calls, c)
		return
	}
	*msgs = append(*msgs, modelserver.Message{Role: "assistant", Calls: []modelserver.Call{c}})
}

// item reads one input item into the Turn.
func (d *decoder) item(raw json.RawMessage) {
	msgs := &d.turn.Messages
	var it item
	if json.Unmarshal(raw, &it) != nil {
		// tool_search_call has an object for arguments.
		var ts struct {
			Type      string          `json:"type"`
			CallID    string          `json:"call_id"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(raw, &ts) == nil && ts.Type == "tool_search_call" {
			d.call(modelserver.Call{ID: ts.CallID, Name: "tool_search", Args: ts.Arguments})
		}
		return
	}
	switch it.Type {
	case "message", "":
		text := modelserver.ContentText(it.Content)
		switch it.Role {
		case "developer", "system":
			d.system = append(d.system, text)
		case "user":
			if isContext(text) {
				d.system = append(d.system, text)
			} else {
				*msgs = append(*msgs, modelserver.Message{Role: "user", Text: text})
			}
		case "assistant":
			*msgs = append(*msgs, modelserver.Message{Role: "assistant", Text: text})
		}
	case "function_call":
		args := json.RawMessage(it.Arguments)
		if !json.Valid(args) {
			args, _ = json.Marshal(it.Arguments)
		}
		d.call(modelserver.Call{ID: it.CallID, Name: qualified(it.Namespace, it.Name), Args: args})
	case "custom_tool_call":
		args, _ := json.Marshal(it.Input)
		d.call(modelserver.Call{ID: it.CallID, Name: it.Name, Args: args})
	case "function_call_output", "custom_tool_call_output":
		*msgs = append(*msgs, modelserver.Message{Role: "tool", CallID: it.CallID, Text: outputText(it.Output)})
	case "tool_search_output":
		// The text of a search's result is the JSON of the tools found,
		// and they are offered from then on.
		*msgs = append(*msgs, modelserver.Message{Role: "tool", CallID: it.CallID, Text: string(it.Tools)})
		var found []tool
		json.Unmarshal(it.Tools, &found)
		d.addTools(found, "")
	}
}

// outputText reads a tool output: a string, a list of content parts, or
// an object with content (older shapes).
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return modelserver.ContentText(obj.Content)
	}
	return modelserver.ContentText(raw)
}
