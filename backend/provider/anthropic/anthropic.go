// Package anthropic is the provider for Anthropic's Messages API, streamed
// over server-sent events. Conch runs the tools the model asks for.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"conch/backend/provider"
	"conch/backend/provider/internal/wire"
)

// Defaults for a Config that leaves them out.
const (
	// DefaultBaseURL is Anthropic's API root.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultModel answers when neither the request nor the config names one.
	DefaultModel = "claude-sonnet-4-5"
	// DefaultFastModel is the small model for helpers.
	DefaultFastModel = "claude-haiku-4-5"
	// DefaultMaxTokens bounds one reply; the API requires a bound.
	DefaultMaxTokens = 8192
	// APIVersion is the anthropic-version header this package speaks.
	APIVersion = "2023-06-01"
)

// Config says how to reach the Messages API.
type Config struct {
	// ID names this provider in Conch's settings; empty is "anthropic".
	ID string
	// Name is what the person reads and what errors say; empty is
	// "Anthropic".
	Name string
	// BaseURL is the API root without /v1; empty is DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key; without one the provider is not ready.
	APIKey string
	// DefaultModel and FastModel default to DefaultModel and
	// DefaultFastModel.
	DefaultModel, FastModel string
	// HTTPClient makes the requests; nil uses a client without an overall
	// timeout, since a reply streams for as long as it takes.
	HTTPClient *http.Client
	// MaxTokens bounds each reply; zero is DefaultMaxTokens.
	MaxTokens int
}

// Provider calls the Messages API. It is safe for concurrent use.
type Provider struct {
	cfg Config
	api wire.Client
}

var _ provider.Provider = (*Provider)(nil)

// New makes a provider from cfg, filling in the defaults it leaves out.
func New(cfg Config) *Provider {
	if cfg.ID == "" {
		cfg.ID = "anthropic"
	}
	if cfg.Name == "" {
		cfg.Name = "Anthropic"
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = DefaultModel
	}
	if cfg.FastModel == "" {
		cfg.FastModel = DefaultFastModel
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	p := &Provider{cfg: cfg}
	p.api = wire.Client{
		Name: cfg.Name, BaseURL: cfg.BaseURL, HTTP: client, Header: p.header,
		Classify: func(status int, h http.Header, body []byte) error { return p.classify(status, h, parseAPIError(body)) },
		Refused:  "is the address right?", Unfound: "is the network up?",
	}
	return p
}

// Info is ready when a key is set and, if the API answers GET /v1/models,
// it accepts the key; the models listed there become Models.List.
func (p *Provider) Info(ctx context.Context) provider.Info {
	info := provider.Info{
		ID: p.cfg.ID, Name: p.cfg.Name, Kind: "anthropic", Category: provider.ChatOnly, CanAsk: true,
		Models: provider.Models{Default: p.cfg.DefaultModel, Fast: p.cfg.FastModel},
	}
	if p.cfg.APIKey == "" {
		info.Reason = "No API key is set for " + p.cfg.Name + "."
		info.Models.List = p.knownModels()
		return info
	}
	list, err := p.models(ctx)
	if err != nil {
		info.Reason = err.Error()
		info.Models.List = p.knownModels()
		return info
	}
	if len(list) == 0 {
		list = p.knownModels()
	}
	info.Models.List = list
	info.Ready = true
	return info
}

func (p *Provider) knownModels() []string {
	if p.cfg.DefaultModel == p.cfg.FastModel {
		return []string{p.cfg.DefaultModel}
	}
	return []string{p.cfg.DefaultModel, p.cfg.FastModel}
}

// models lists the API's models. Only a refused key or no answer at all is
// an error: a server error here should not stop a chat from being tried.
func (p *Provider) models(ctx context.Context) ([]string, error) {
	status, h, body, err := p.api.Get(ctx, "/v1/models?limit=1000")
	switch {
	case err != nil:
		return nil, err
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return nil, p.classify(status, h, parseAPIError(body))
	case status/100 != 2:
		return nil, nil
	}
	list, err := wire.ModelIDs(body)
	if err != nil || len(list) == 0 {
		return nil, nil
	}
	return list, nil
}

func (p *Provider) header(req *http.Request) {
	req.Header.Set("X-Api-Key", p.cfg.APIKey)
	req.Header.Set("Anthropic-Version", APIVersion)
}

// Stream posts req to /v1/messages and streams the reply. Every failure
// after the request is built, HTTP errors included, arrives as the stream's
// ErrorEvent.
func (p *Provider) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	body, err := p.requestBody(req)
	if err != nil {
		return nil, err
	}
	return p.api.Stream(ctx, "/v1/messages", body, func(resp *http.Response, send func(provider.Event) bool) provider.Event {
		return newDecoder(p.cfg.Name, p.classify).decode(resp.Body, send)
	}), nil
}

// block is one content block of a request message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type wireMessage struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireRequest struct {
	Model     string        `json:"model"`
	MaxTokens int           `json:"max_tokens"`
	System    string        `json:"system,omitempty"`
	Messages  []wireMessage `json:"messages"`
	Tools     []wireTool    `json:"tools,omitempty"`
	Stream    bool          `json:"stream"`
}

// emptySchema stands in for a tool that declares no parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// requestBody maps req onto the wire. The API wants turns to alternate, so
// tool results (sent as user turns) merge with the user turn around them,
// and text blocks are never empty.
func (p *Provider) requestBody(req provider.Request) ([]byte, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.DefaultModel
	}
	w := wireRequest{Model: model, MaxTokens: p.cfg.MaxTokens, System: req.System, Stream: true}
	add := func(role string, blocks ...block) {
		if len(blocks) == 0 {
			return
		}
		if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
			w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
			return
		}
		w.Messages = append(w.Messages, wireMessage{Role: role, Content: blocks})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case provider.User:
			if m.Text != "" {
				add("user", block{Type: "text", Text: m.Text})
			}
		case provider.Assistant:
			var blocks []block
			if m.Text != "" {
				blocks = append(blocks, block{Type: "text", Text: m.Text})
			}
			for _, c := range m.ToolCalls {
				input := json.RawMessage(bytes.TrimSpace(c.Arguments))
				if len(input) == 0 || string(input) == "null" {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
			}
			add("assistant", blocks...)
		case provider.ToolRole:
			b := block{Type: "tool_result", ToolUseID: m.ToolCallID, IsError: m.IsError}
			if m.Text != "" {
				content := m.Text
				b.Content = &content
			}
			add("user", b)
		default:
			return nil, fmt.Errorf("message %d for %s has unknown role %q", i, p.cfg.Name, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema := t.Schema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = emptySchema
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode the request for %s: %w", p.cfg.Name, err)
	}
	return body, nil
}
