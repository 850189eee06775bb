// Package openai is the provider for any OpenAI-compatible Chat Completions
// endpoint: OpenAI itself, OpenRouter, and servers on this computer such as
// Ollama, LM Studio and llama.cpp. Conch runs the tools the model asks for.
package openai

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

// Config says where a provider is and how to call it.
type Config struct {
	// ID names this provider in Conch's settings ("ollama", "openrouter").
	ID string
	// Name is what the person reads ("Ollama") and what errors say.
	Name string
	// BaseURL is the API root, ending in /v1 for most servers
	// (http://127.0.0.1:11434/v1); /chat/completions and /models are added.
	BaseURL string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// Category is LocalModel for servers on this computer, ChatOnly for
	// hosted ones.
	Category provider.Category
	// DefaultModel is used when a request names none; empty takes the
	// first model the server lists.
	DefaultModel string
	// FastModel is the small model for helpers; empty means DefaultModel.
	FastModel string
	// Headers are added to every request (OpenRouter's X-Title).
	Headers map[string]string
	// HTTPClient makes the requests; nil uses a client without an overall
	// timeout, since a reply streams for as long as it takes.
	HTTPClient *http.Client
}

// Ollama is the preset for Ollama on this computer.
func Ollama() Config {
	return Config{ID: "ollama", Name: "Ollama", BaseURL: "http://127.0.0.1:11434/v1", Category: provider.LocalModel}
}

// LMStudio is the preset for LM Studio's server on this computer.
func LMStudio() Config {
	return Config{ID: "lmstudio", Name: "LM Studio", BaseURL: "http://127.0.0.1:1234/v1", Category: provider.LocalModel}
}

// OpenRouter is the preset for OpenRouter with the person's key.
func OpenRouter(key string) Config {
	return Config{
		ID: "openrouter", Name: "OpenRouter", BaseURL: "https://openrouter.ai/api/v1", APIKey: key,
		Category: provider.ChatOnly, DefaultModel: "openai/gpt-4.1", FastModel: "openai/gpt-4.1-mini",
		Headers: map[string]string{"X-Title": "Conch"},
	}
}

// OpenAI is the preset for OpenAI's own API with the person's key.
func OpenAI(key string) Config {
	return Config{
		ID: "openai", Name: "OpenAI", BaseURL: "https://api.openai.com/v1", APIKey: key,
		Category: provider.ChatOnly, DefaultModel: "gpt-4.1", FastModel: "gpt-4.1-mini",
	}
}

// Provider calls one OpenAI-compatible endpoint. It is safe for concurrent
// use.
type Provider struct {
	cfg Config
	api wire.Client
}

var _ provider.Provider = (*Provider)(nil)

// New makes a provider from cfg, filling in a name, category and client
// when they are missing.
func New(cfg Config) *Provider {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Name == "" {
		cfg.Name = cfg.BaseURL
	}
	if cfg.ID == "" {
		cfg.ID = "openai"
	}
	if cfg.Category == "" {
		cfg.Category = provider.ChatOnly
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	p := &Provider{cfg: cfg}
	p.api = wire.Client{
		Name: cfg.Name, BaseURL: cfg.BaseURL, HTTP: client, Header: p.header,
		Classify: func(status int, h http.Header, body []byte) error { return p.classify(status, h, parseAPIError(body)) },
		Refused:  "is " + cfg.Name + " running?", Unfound: "is the address right and the network up?",
	}
	return p
}

// Info lists the server's models (GET {base}/models). The provider is ready
// when the server answers and there is a model to use.
func (p *Provider) Info(ctx context.Context) provider.Info {
	info := provider.Info{
		ID: p.cfg.ID, Name: p.cfg.Name, Kind: "openai", Category: p.cfg.Category, CanAsk: true,
		Models: provider.Models{Default: p.cfg.DefaultModel, Fast: p.cfg.FastModel},
	}
	list, err := p.models(ctx)
	info.Models.List = list
	if info.Models.Default == "" && len(list) > 0 {
		info.Models.Default = list[0]
	}
	if info.Models.Fast == "" {
		info.Models.Fast = info.Models.Default
	}
	switch {
	case err != nil:
		info.Reason = err.Error()
	case info.Models.Default == "":
		info.Reason = p.cfg.Name + " offers no models yet."
	default:
		info.Ready = true
	}
	return info
}

// models asks the server for its models. A server without /models (404)
// still answers, so that is no error.
func (p *Provider) models(ctx context.Context) ([]string, error) {
	status, h, body, err := p.api.Get(ctx, "/models")
	switch {
	case err != nil:
		return nil, err
	case status == http.StatusNotFound:
		return nil, nil
	case status/100 != 2:
		return nil, p.classify(status, h, parseAPIError(body))
	}
	list, err := wire.ModelIDs(body)
	if err != nil {
		return nil, wire.Errorf(provider.ErrProtocol, "%s listed its models in a form Conch cannot read: %v.", p.cfg.Name, err)
	}
	return list, nil
}

func (p *Provider) header(req *http.Request) {
	if p.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	for k, v := range p.cfg.Headers {
		req.Header.Set(k, v)
	}
}

// Stream posts req to {base}/chat/completions and streams the reply. Every
// failure after the request is built, HTTP errors included, arrives as the
// stream's ErrorEvent.
func (p *Provider) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	body, err := p.requestBody(req)
	if err != nil {
		return nil, err
	}
	return p.api.Stream(ctx, "/chat/completions", body, p.decode), nil
}

// decode reads a reply: streamed, or whole from a server that ignores
// "stream": true.
func (p *Provider) decode(resp *http.Response, send func(provider.Event) bool) provider.Event {
	d := newDecoder(p.cfg.Name, p.classify)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return d.whole(resp.Body, send)
	}
	return d.decode(resp.Body, send)
}

// wireMessage is one message of a Chat Completions request.
type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type wireRequest struct {
	Model         string        `json:"model"`
	Messages      []wireMessage `json:"messages"`
	Tools         []wireTool    `json:"tools,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// emptySchema stands in for a tool that declares no parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// requestBody maps req onto the wire: the system prompt first, assistant
// tool calls with their arguments as a JSON string, tool results as role
// "tool". Chat Completions has no error flag on a tool result, so a failed
// one says so in its text.
func (p *Provider) requestBody(req provider.Request) ([]byte, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.DefaultModel
	}
	if model == "" {
		return nil, wire.Errorf(provider.ErrNotReady, "No model is chosen for %s.", p.cfg.Name)
	}
	w := wireRequest{Model: model, Stream: true}
	w.StreamOptions.IncludeUsage = true
	text := func(s string) *string { return &s }
	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: text(req.System)})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case provider.User:
			w.Messages = append(w.Messages, wireMessage{Role: "user", Content: text(m.Text)})
		case provider.Assistant:
			wm := wireMessage{Role: "assistant"}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				wm.Content = text(m.Text)
			}
			for _, c := range m.ToolCalls {
				wc := wireToolCall{ID: c.ID, Type: "function"}
				wc.Function.Name = c.Name
				wc.Function.Arguments = string(bytes.TrimSpace(c.Arguments))
				if wc.Function.Arguments == "" {
					wc.Function.Arguments = "{}"
				}
				wm.ToolCalls = append(wm.ToolCalls, wc)
			}
			w.Messages = append(w.Messages, wm)
		case provider.ToolRole:
			content := m.Text
			if m.IsError {
				content = "Error: " + content
			}
			w.Messages = append(w.Messages, wireMessage{Role: "tool", Content: text(content), ToolCallID: m.ToolCallID})
		default:
			return nil, fmt.Errorf("message %d for %s has unknown role %q", i, p.cfg.Name, m.Role)
		}
	}
	for _, t := range req.Tools {
		wt := wireTool{Type: "function"}
		wt.Function.Name = t.Name
		wt.Function.Description = t.Description
		wt.Function.Parameters = t.Schema
		if len(bytes.TrimSpace(t.Schema)) == 0 {
			wt.Function.Parameters = emptySchema
		}
		w.Tools = append(w.Tools, wt)
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode the request for %s: %w", p.cfg.Name, err)
	}
	return body, nil
}
