package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"conch/backend/testrig/modelserver"
)

// The wire types of the Gemini API, as far as the CLI uses them. They are
// exported so tests can build raw replies (see SSE).

// GenerateRequest is the body of generateContent / streamGenerateContent.
type GenerateRequest struct {
	Contents          []Content       `json:"contents"`
	SystemInstruction json.RawMessage `json:"systemInstruction,omitempty"`
	Tools             []Tool          `json:"tools,omitempty"`
	ToolConfig        json.RawMessage `json:"toolConfig,omitempty"`
	GenerationConfig  json.RawMessage `json:"generationConfig,omitempty"`
}

// Tool is one entry of a request's tools.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations,omitempty"`
}

// FunctionDeclaration is a tool the CLI offers the model.
type FunctionDeclaration struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Content is one turn of contents (role "user" or "model").
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one part of a Content.
type Part struct {
	Text             *string           `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a tool call the model asks for.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// FunctionResponse is a tool's result the CLI sends back.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Response is one GenerateContentResponse (one SSE chunk when streamed).
type Response struct {
	Candidates    []Candidate    `json:"candidates,omitempty"`
	UsageMetadata *UsageMetadata `json:"usageMetadata,omitempty"`
	ModelVersion  string         `json:"modelVersion,omitempty"`
	ResponseID    string         `json:"responseId,omitempty"`
}

// Candidate is a response's candidate.
type Candidate struct {
	Content      Content `json:"content"`
	FinishReason string  `json:"finishReason,omitempty"`
	Index        int     `json:"index"`
}

// UsageMetadata is a response's token counts.
type UsageMetadata struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

// TextPart is a text part; ThoughtPart a thought (a thought's first line
// in **bold** becomes the CLI's thought subject).
func TextPart(s string) Part    { return Part{Text: &s} }
func ThoughtPart(s string) Part { return Part{Text: &s, Thought: true} }

// CallPart is a functionCall part.
func CallPart(c modelserver.Call) Part {
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return Part{FunctionCall: &FunctionCall{ID: c.ID, Name: c.Name, Args: args}}
}

// Chunk is one streamed response of the model's parts; finish, when not
// empty, is its finishReason (e.g. "STOP") and adds usageMetadata.
func Chunk(finish string, parts ...Part) Response {
	r := Response{Candidates: []Candidate{{Content: Content{Role: "model", Parts: parts}, FinishReason: finish}},
		ModelVersion: "gemini-2.5-flash"}
	if finish != "" {
		r.UsageMetadata = &UsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15}
	}
	return r
}

// SSE is a raw streamGenerateContent body of the given chunks, for a
// Reply{Body: SSE(...)} (Status 0).
func SSE(chunks ...Response) string {
	var b strings.Builder
	for _, c := range chunks {
		j, _ := json.Marshal(c)
		fmt.Fprintf(&b, "data: %s\r\n\r\n", j)
	}
	return b.String()
}

// Decode turns a generateContent body into a Turn (its Model left empty:
// the model is in the URL path).
func Decode(body []byte) (modelserver.Turn, error) {
	var req GenerateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return modelserver.Turn{}, err
	}
	return decode(req), nil
}

// decode: the system instruction's texts joined; one "user" or
// "assistant" message per content (text parts joined with "\n", thoughts
// left out, functionCall parts as Calls, a <session_context> part moved to
// System); and one "tool" message per
// functionResponse part, its Text the response's "output" (or "error", or
// the response JSON) and its CallID the part's id (or, with none, its name).
func decode(req GenerateRequest) modelserver.Turn {
	var turn modelserver.Turn
	turn.System = systemText(req.SystemInstruction)
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			turn.Tools = append(turn.Tools, f.Name)
		}
	}
	for _, c := range req.Contents {
		role := "user"
		if c.Role == "model" {
			role = "assistant"
		}
		msg := modelserver.Message{Role: role}
		var text []string
		flush := func() {
			if len(text) > 0 || len(msg.Calls) > 0 {
				msg.Text = strings.Join(text, "\n")
				turn.Messages = append(turn.Messages, msg)
			}
			msg, text = modelserver.Message{Role: role}, nil
		}
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				args := p.FunctionCall.Args
				if len(args) == 0 || string(args) == "null" {
					args = json.RawMessage("{}")
				}
				msg.Calls = append(msg.Calls, modelserver.Call{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: args})
			case p.FunctionResponse != nil:
				flush()
				id := p.FunctionResponse.ID
				if id == "" {
					id = p.FunctionResponse.Name
				}
				turn.Messages = append(turn.Messages, modelserver.Message{
					Role: "tool", Text: responseText(p.FunctionResponse.Response), CallID: id,
				})
			case p.Text != nil && !p.Thought && isContext(*p.Text):
				// the <session_context> part the CLI puts before the first
				// prompt (date, OS, temp dir) is an instruction, not chat.
				turn.System += "\n" + *p.Text
			case p.Text != nil && !p.Thought:
				text = append(text, *p.Text)
			}
		}
		flush()
	}
	return turn
}

func isContext(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "<session_context>") && strings.HasSuffix(t, "</session_context>")
}

// systemText is the text of a systemInstruction, which the SDK sends as a
// Content ({"parts":[{"text":…}]}) but may be a bare string.
func systemText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var c Content
	json.Unmarshal(raw, &c)
	var parts []string
	for _, p := range c.Parts {
		if p.Text != nil {
			parts = append(parts, *p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func responseText(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"output", "error"} {
			var s string
			if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil {
				return s
			}
		}
	}
	return string(raw)
}
