package chatcompletions

import (
	"bytes"
	"encoding/json"
	"strings"

	"conch/backend/testrig/modelserver"
)

// request is the part of a Chat Completions request the server reads.
type request struct {
	Model         string        `json:"model"`
	Messages      []wireMessage `json:"messages"`
	Tools         []wireTool    `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is a string, null, or a list of content parts.
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wireCall struct {
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments is the JSON string of the arguments; a few clients
		// send the object itself.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// Decode turns a Chat Completions request body into a Turn: the system
// and developer messages joined into System, one message per user,
// assistant and tool message (an assistant's tool_calls as its Calls, a
// tool message's tool_call_id as its CallID), in order, and the names of
// the function tools offered.
func Decode(body []byte) (modelserver.Turn, error) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return modelserver.Turn{}, err
	}
	return decode(req), nil
}

func decode(req request) modelserver.Turn {
	turn := modelserver.Turn{Model: req.Model}
	for _, t := range req.Tools {
		turn.Tools = append(turn.Tools, t.Function.Name)
	}
	var system []string
	for _, m := range req.Messages {
		if m.Role == "system" || m.Role == "developer" {
			system = append(system, modelserver.ContentText(m.Content))
			continue
		}
		msg := modelserver.Message{Role: m.Role, Text: modelserver.ContentText(m.Content), CallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.Calls = append(msg.Calls, modelserver.Call{ID: c.ID, Name: c.Function.Name, Args: args(c.Function.Arguments)})
		}
		turn.Messages = append(turn.Messages, msg)
	}
	turn.System = strings.Join(system, "\n\n")
	return turn
}

// args is a call's arguments as JSON: the object its arguments string
// holds (or the object sent in its place), "{}" for none, and the string
// itself when it holds no JSON, so that a Turn always marshals.
func args(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			return json.RawMessage("{}")
		}
		return raw
	}
	switch {
	case strings.TrimSpace(s) == "":
		return json.RawMessage("{}")
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}
