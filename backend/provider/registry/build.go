package registry

import (
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"conch/backend/provider"
	"conch/backend/provider/agentcli"
	"conch/backend/provider/anthropic"
	"conch/backend/provider/openai"
	"conch/backend/provider/shell"
	"conch/backend/store"
)

// Kinds of provider a configuration may name.
const (
	KindOpenAI     = "openai"
	KindAnthropic  = "anthropic"
	KindClaudeCode = "claude-code"
	KindCodex      = "codex"
	KindGemini     = "gemini"
)

// kinds is every kind, for validation and its message.
var kinds = []string{KindOpenAI, KindAnthropic, KindClaudeCode, KindCodex, KindGemini}

// presets are the openai presets a configuration may start from, by name.
var presets = map[string]func(key string) openai.Config{
	"ollama":     func(string) openai.Config { return openai.Ollama() },
	"lmstudio":   func(string) openai.Config { return openai.LMStudio() },
	"openrouter": openai.OpenRouter,
	"openai":     openai.OpenAI,
}

// clis are the coding-agent CLIs offered when their binary is on PATH.
var clis = []struct{ id, name, bin string }{
	{KindClaudeCode, "Claude Code", "claude"},
	{KindCodex, "Codex", "codex"},
	{KindGemini, "Gemini CLI", "gemini"},
}

// find looks for the providers Conch offers without being told: API keys in
// the environment, Ollama answering on this computer, CLIs on PATH, and
// the shell, which is always there.
func (r *Registry) find(ctx context.Context) {
	found := map[string]entry{}
	sh := &shell.Chat{LookPath: r.cfg.LookPath}
	found[shell.ChatID] = entry{p: sh, fallback: provider.Info{ID: shell.ChatID, Name: "Shell", Kind: shell.ChatID, Category: provider.BuiltInShell, CanAsk: true}, source: BuiltIn}
	for _, id := range []string{"openai", "openrouter"} {
		if k := r.cfg.Getenv(envVars[id]); k != "" {
			e := r.build(store.ProviderConfig{ID: id, Kind: KindOpenAI, Preset: id}, key{value: k})
			e.source = FromEnv
			found[id] = e
		}
	}
	if k := r.cfg.Getenv(envVars[KindAnthropic]); k != "" {
		e := r.build(store.ProviderConfig{ID: KindAnthropic, Kind: KindAnthropic}, key{value: k})
		e.source = FromEnv
		found[KindAnthropic] = e
	}
	if r.ollamaAnswers(ctx) {
		e := r.build(store.ProviderConfig{ID: "ollama", Kind: KindOpenAI, Preset: "ollama", BaseURL: r.cfg.OllamaURL}, key{})
		e.source = Detected
		found["ollama"] = e
	}
	for _, c := range clis {
		bin, err := r.cfg.LookPath(c.bin)
		if err != nil {
			continue
		}
		e := r.build(store.ProviderConfig{ID: c.id, Kind: c.id}, key{})
		e.p = agentcli.New(c.bin, agentcli.Config{ID: c.id, Name: c.name, Binary: bin})
		e.source = OnPath
		e.path = bin
		found[c.id] = e
	}
	r.mu.Lock()
	r.found = found
	r.mu.Unlock()
}

// ollamaAnswers reports whether something answers GET {OllamaURL}/models
// with a success within DetectTimeout.
func (r *Registry) ollamaAnswers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DetectTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(r.cfg.OllamaURL, "/")+"/models", nil)
	if err != nil {
		return false
	}
	client := r.cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// build makes the provider a record describes, with its key.
func (r *Registry) build(rec store.ProviderConfig, k key) entry {
	e := entry{source: Configured, preset: rec.Preset, keySet: k.value != "", keyStorage: k.storage}
	switch rec.Kind {
	case KindOpenAI:
		var c openai.Config
		if mk, ok := presets[rec.Preset]; ok {
			c = mk(k.value)
		} else {
			c.Category = provider.ChatOnly
			if local(rec.BaseURL) {
				c.Category = provider.LocalModel
			}
		}
		c.ID = rec.ID
		c.Name = cmp.Or(rec.Name, c.Name, rec.ID)
		c.BaseURL = cmp.Or(rec.BaseURL, c.BaseURL)
		c.APIKey = k.value
		c.DefaultModel = cmp.Or(rec.Model, c.DefaultModel)
		c.FastModel = cmp.Or(rec.FastModel, c.FastModel)
		c.HTTPClient = r.cfg.HTTPClient
		e.p = openai.New(c)
		e.baseURL = strings.TrimRight(c.BaseURL, "/")
		e.fallback = provider.Info{ID: c.ID, Name: c.Name, Kind: KindOpenAI, Category: c.Category, CanAsk: true,
			Models: provider.Models{Default: c.DefaultModel, Fast: cmp.Or(c.FastModel, c.DefaultModel)}}
	case KindAnthropic:
		c := anthropic.Config{
			ID: rec.ID, Name: cmp.Or(rec.Name, "Anthropic"), BaseURL: rec.BaseURL, APIKey: k.value,
			DefaultModel: rec.Model, FastModel: rec.FastModel, HTTPClient: r.cfg.HTTPClient,
		}
		e.p = anthropic.New(c)
		e.baseURL = strings.TrimRight(cmp.Or(rec.BaseURL, anthropic.DefaultBaseURL), "/")
		e.fallback = provider.Info{ID: c.ID, Name: c.Name, Kind: KindAnthropic, Category: provider.ChatOnly, CanAsk: true,
			Models: provider.Models{Default: cmp.Or(rec.Model, anthropic.DefaultModel), Fast: cmp.Or(rec.FastModel, anthropic.DefaultFastModel)}}
	default: // the CLIs; validation let no other kind in
		name := rec.Name
		for _, c := range clis {
			if c.id != rec.Kind {
				continue
			}
			name = cmp.Or(name, c.name)
			cfg := agentcli.Config{ID: rec.ID, Name: name, Model: rec.Model}
			if bin, err := r.cfg.LookPath(c.bin); err == nil {
				cfg.Binary = bin
			}
			e.p = agentcli.New(c.bin, cfg)
		}
		e.fallback = provider.Info{ID: rec.ID, Name: name, Kind: rec.Kind, Category: provider.CodingAgent,
			Models: provider.Models{Default: rec.Model}}
	}
	return e
}

// local reports whether a base URL points at this computer.
func local(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
