package registry

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"sync"
)

// Found is what Conch finds on this computer without being told, as the
// first run's welcome says it (GET /api/found): Ollama answering, the
// coding-agent CLIs on PATH and the API keys in its environment.
type Found struct {
	Ollama FoundServer `json:"ollama"`
	// CLIs are the coding-agent CLIs on PATH, signed in or not.
	CLIs []FoundCLI `json:"clis" ts:"notnull"`
	// Keys are the API key variables set in Conch's environment.
	Keys []FoundKey `json:"keys" ts:"notnull"`
}

// FoundServer is a model server looked for on this computer.
type FoundServer struct {
	// Running is true when it answered just now.
	Running bool `json:"running"`
	// Address is where it was looked for ("127.0.0.1:11434").
	Address string `json:"address"`
	// Models are the models it offers, when it answered.
	Models []string `json:"models" ts:"notnull"`
}

// FoundCLI is a coding-agent CLI found on PATH.
type FoundCLI struct {
	// ID is its provider id ("claude-code"); Name what people call it.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Path is the binary found.
	Path string `json:"path"`
	// Ready is false when it cannot work yet; Reason says why, in the
	// CLI's words when it gave any ("Not logged in · Please run /login").
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
}

// FoundKey is an API key variable set in the environment (never its value).
type FoundKey struct {
	// Variable is its name ("OPENAI_API_KEY").
	Variable string `json:"variable"`
	// Provider is the provider it makes; Name what people call it.
	Provider string `json:"provider"`
	Name     string `json:"name"`
}

// Detect looks again for what Conch finds on its own (so Ollama started
// since, or a CLI installed since, shows up as a provider too) and says
// what it found. It asks each found CLI how it stands, in parallel, each
// for at most InfoTimeout.
func (r *Registry) Detect(ctx context.Context) Found {
	r.find(ctx)
	r.mu.RLock()
	found := make(map[string]entry, len(r.found))
	for id, e := range r.found {
		found[id] = e
	}
	r.mu.RUnlock()

	f := Found{Ollama: FoundServer{Address: address(r.cfg.OllamaURL), Models: []string{}}, CLIs: []FoundCLI{}, Keys: []FoundKey{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for id, e := range found {
		switch e.source {
		case FromEnv:
			f.Keys = append(f.Keys, FoundKey{Variable: envVars[id], Provider: id, Name: e.fallback.Name})
		case Detected, OnPath:
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := r.describe(ctx, e)
				mu.Lock()
				defer mu.Unlock()
				if e.source == Detected {
					f.Ollama.Running = l.Ready
					f.Ollama.Models = append(f.Ollama.Models, l.Models.List...)
					return
				}
				f.CLIs = append(f.CLIs, FoundCLI{ID: l.ID, Name: l.Name, Path: e.path, Ready: l.Ready, Reason: l.Reason})
			}()
		}
	}
	wg.Wait()
	slices.SortFunc(f.CLIs, func(a, b FoundCLI) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(f.Keys, func(a, b FoundKey) int { return cmp.Compare(a.Variable, b.Variable) })
	return f
}

// address is the host:port of a base URL, for a sentence.
func address(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return base
	}
	return u.Host
}
