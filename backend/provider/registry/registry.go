// Package registry is the set of connected providers the chats read from:
// the ones the person configured (kept in the store, their keys in the OS
// keyring or, without one, in the store), the ones the environment offers
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY), Ollama when it
// answers on this computer at start, the coding-agent CLIs on PATH, and the
// built-in shell, which runs each message as a bash command.
//
// A configured provider with the id of a found one (openai, ollama,
// claude-code...) takes its place; deleting the configuration brings the
// found one back. Found ones cannot be deleted, only overridden.
package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"conch/backend/event"
	"conch/backend/provider"
	"conch/backend/store"
)

// Source says where a provider came from.
type Source string

const (
	// Configured providers were connected by the person (PUT).
	Configured Source = "configured"
	// FromEnv providers come from an API key in Conch's environment.
	FromEnv Source = "env"
	// Detected providers answered on this computer at start (Ollama).
	Detected Source = "detected"
	// OnPath providers are coding-agent CLIs found on PATH.
	OnPath Source = "path"
	// BuiltIn is the shell, always there.
	BuiltIn Source = "builtin"
	// Lent providers were lent to a host's runner by a desktop, for the
	// tasks it sent (Lend), and are kept in memory only.
	Lent Source = "lent"
)

// Defaults for a Config that leaves them out.
const (
	// OllamaURL is where Ollama's OpenAI-compatible API answers.
	OllamaURL = "http://127.0.0.1:11434/v1"
	// DetectTimeout bounds the look for Ollama at start.
	DetectTimeout = 500 * time.Millisecond
	// InfoTimeout bounds each provider's Info when listing.
	InfoTimeout = 3 * time.Second
)

// Config wires a registry.
type Config struct {
	// Store keeps configured providers and, without a keyring, their keys.
	Store store.Providers
	// Keyring keeps keys; nil is the OS keyring (System). It is probed once
	// at New: when it does not answer, keys go to Store with StoreNotice.
	Keyring Keyring
	// Getenv reads the API key variables; nil is os.Getenv.
	Getenv func(string) string
	// LookPath finds the CLIs; nil is exec.LookPath.
	LookPath func(string) (string, error)
	// OllamaURL is where to look for Ollama (…/v1); empty is OllamaURL.
	OllamaURL string
	// HTTPClient is used by the look for Ollama and by the model API
	// providers; nil uses their defaults.
	HTTPClient *http.Client
	// DetectTimeout and InfoTimeout override the defaults of the same name.
	DetectTimeout, InfoTimeout time.Duration
	// Log records keys that could not be read; nil discards.
	Log *slog.Logger
	// Now is the clock for the records' times; nil is time.Now.
	Now func() time.Time
	// Bus, if set, hears of every provider connected, changed or removed
	// (providers.changed).
	Bus *event.Bus
}

// Listing is one provider as GET /api/providers lists it. It never holds a
// key, only whether one is set and where it is kept.
type Listing struct {
	ID       string            `json:"id"`
	Kind     string            `json:"kind"`
	Name     string            `json:"name"`
	Category provider.Category `json:"category"`
	Ready    bool              `json:"ready"`
	Reason   string            `json:"reason"`
	Models   provider.Models   `json:"models"`
	CanAsk   bool              `json:"canAsk"`
	// Version is a coding-agent CLI's version, when it could tell.
	Version string `json:"version,omitempty"`
	BaseURL string `json:"baseUrl,omitempty"`
	Preset  string `json:"preset,omitempty"`
	KeySet  bool   `json:"keySet"`
	// KeyStorage is "keyring" or "store" for a key the person gave; empty
	// for none, or for a key from the environment.
	KeyStorage string `json:"keyStorage,omitempty"`
	// KeyNotice tells the person when the key is not in a keyring.
	KeyNotice string `json:"keyNotice,omitempty"`
	Source    Source `json:"source"`
}

// entry is one live provider and what the listing says beside its Info.
type entry struct {
	p          provider.Provider
	fallback   provider.Info // what Info says when the probe does not answer
	source     Source
	baseURL    string
	preset     string
	keySet     bool
	keyStorage string
	path       string // a CLI's binary
}

// Registry holds the connected providers. It implements provider.Registry and is
// safe for concurrent use.
type Registry struct {
	cfg        Config
	keyring    Keyring // nil when the OS keyring does not answer; written with ops and mu held
	keyringErr error

	ops sync.Mutex // serialises Put and Delete, whose writes span stores

	mu         sync.RWMutex
	locked     bool             // guarded by mu; the keyring last refused a key as locked
	found      map[string]entry // guarded by mu; env, detected, path
	configured map[string]entry // guarded by mu
	lent       map[string]*lent // guarded by mu; on a runner, by Lend
	records    map[string]store.ProviderConfig
}

var _ provider.Registry = (*Registry)(nil)

// New assembles the registry: it reads the configured providers and their
// keys, the API key variables, looks for Ollama (for at most DetectTimeout)
// and for the CLIs on PATH. A configuration that cannot be read is left out
// and named in the error, returned with a working registry.
func New(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.Keyring == nil {
		cfg.Keyring = System{}
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.LookPath == nil {
		cfg.LookPath = exec.LookPath
	}
	if cfg.OllamaURL == "" {
		cfg.OllamaURL = OllamaURL
	}
	if cfg.DetectTimeout <= 0 {
		cfg.DetectTimeout = DetectTimeout
	}
	if cfg.InfoTimeout <= 0 {
		cfg.InfoTimeout = InfoTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Registry{
		cfg:        cfg,
		found:      map[string]entry{},
		configured: map[string]entry{},
		records:    map[string]store.ProviderConfig{},
		lent:       map[string]*lent{},
	}
	if err := usable(cfg.Keyring); err != nil {
		r.keyringErr = err
		r.locked = errors.Is(err, ErrLocked)
		cfg.Log.Info("no system keyring; provider keys are kept in the store", "err", err)
	} else {
		r.keyring = cfg.Keyring
	}
	r.find(ctx)
	recs, err := cfg.Store.ProviderConfigs()
	for _, rec := range recs {
		if !slices.Contains(kinds, rec.Kind) {
			cfg.Log.Warn("stored provider has an unknown kind; left out", "provider", rec.ID, "kind", rec.Kind)
			continue
		}
		r.records[rec.ID] = rec
		r.configured[rec.ID] = r.build(rec, r.readKey(rec))
	}
	if err != nil {
		return r, fmt.Errorf("read connected providers: %w", err)
	}
	return r, nil
}

// KeyStorage says where a key given now would be kept: InKeyring, or
// InStore when the OS keyring does not answer.
func (r *Registry) KeyStorage() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.keyring == nil {
		return InStore
	}
	return InKeyring
}

// Provider returns the provider with id.
func (r *Registry) Provider(id string) (provider.Provider, bool) {
	e, ok := r.entry(id)
	return e.p, ok
}

// IDs lists every provider's id, sorted.
func (r *Registry) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.found)+len(r.configured))
	for id := range r.found {
		ids = append(ids, id)
	}
	for id := range r.configured {
		if _, ok := r.found[id]; !ok {
			ids = append(ids, id)
		}
	}
	for id := range r.lent {
		_, f := r.found[id]
		if _, c := r.configured[id]; !f && !c {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (r *Registry) entry(id string) (entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e, ok := r.configured[id]; ok {
		return e, true
	}
	if e, ok := r.found[id]; ok {
		return e, true
	}
	if l, ok := r.lent[id]; ok {
		return l.entry, true
	}
	return entry{}, false
}

// List describes every provider, sorted by id. The providers are asked for
// their Info in parallel, each for at most InfoTimeout, so one that hangs
// costs the list no more than that.
func (r *Registry) List(ctx context.Context) []Listing {
	ids := r.IDs()
	out := make([]Listing, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		e, ok := r.entry(id)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = r.describe(ctx, e)
		}()
	}
	wg.Wait()
	return slices.DeleteFunc(out, func(l Listing) bool { return l.ID == "" })
}

// Get describes one provider.
func (r *Registry) Get(ctx context.Context, id string) (Listing, error) {
	e, ok := r.entry(id)
	if !ok {
		return Listing{}, fmt.Errorf("provider %s: %w", id, ErrNotFound)
	}
	return r.describe(ctx, e), nil
}

// describe asks e for its Info, giving up after InfoTimeout.
func (r *Registry) describe(ctx context.Context, e entry) Listing {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.InfoTimeout)
	defer cancel()
	done := make(chan provider.Info, 1)
	go func() { done <- e.p.Info(ctx) }()
	var info provider.Info
	select {
	case info = <-done:
	case <-ctx.Done():
		info = e.fallback
		info.Ready = false
		info.Reason = fmt.Sprintf("%s did not answer within %s.", cmp.Or(info.Name, info.ID), r.cfg.InfoTimeout)
	}
	l := Listing{
		ID: e.fallback.ID, Kind: e.fallback.Kind, Name: cmp.Or(info.Name, e.fallback.Name),
		Category: cmp.Or(info.Category, e.fallback.Category),
		Ready:    info.Ready, Reason: info.Reason, Models: info.Models, CanAsk: info.CanAsk, Version: info.Version,
		BaseURL: e.baseURL, Preset: e.preset, KeySet: e.keySet, KeyStorage: e.keyStorage, Source: e.source,
	}
	if l.Models.List == nil {
		l.Models.List = []string{}
	}
	if e.keyStorage == InStore {
		l.KeyNotice = r.storeNotice()
	}
	return l
}

// storeNotice says why a key is in the store: the keyring is locked,
// there is none, or there is one now that could not take it then.
func (r *Registry) storeNotice() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case r.locked:
		return LockedNotice
	case r.keyring != nil:
		return MoveNotice
	}
	return StoreNotice
}

// keyLocked reports whether the keyring was locked when last asked.
func (r *Registry) keyLocked() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.locked
}

// readKey returns rec's key from where it was kept, else from the
// environment for a provider of its id or preset.
func (r *Registry) readKey(rec store.ProviderConfig) key {
	switch rec.KeyStorage {
	case InKeyring:
		if r.keyring != nil {
			k, err := r.keyring.Get(rec.ID)
			if err == nil {
				return key{value: k, storage: InKeyring}
			}
			r.cfg.Log.Warn("read provider key from the keyring", "provider", rec.ID, "err", err)
		} else {
			r.cfg.Log.Warn("provider key is in the keyring, which does not answer", "provider", rec.ID, "err", r.keyringErr)
		}
	case InStore:
		k, err := r.cfg.Store.ProviderKey(rec.ID)
		if err == nil {
			return key{value: k, storage: InStore}
		}
		r.cfg.Log.Warn("read provider key from the store", "provider", rec.ID, "err", err)
	}
	return key{value: r.envKey(rec)}
}

// key is a provider's key and where it is kept ("" for the environment).
type key struct {
	value   string
	storage string
}

// envKey is the key the environment offers a configured provider. Only a
// provider that goes to the variable's own service gets it (preset openai
// or openrouter, or kind anthropic, with no base URL of its own), so a key
// is never sent to a server the person pointed elsewhere.
func (r *Registry) envKey(rec store.ProviderConfig) string {
	if rec.BaseURL != "" {
		return ""
	}
	name := rec.Preset
	if rec.Kind == KindAnthropic {
		name = KindAnthropic
	}
	if v, ok := envVars[name]; ok {
		return r.cfg.Getenv(v)
	}
	return ""
}

// envVars maps a provider id to its key variable.
var envVars = map[string]string{
	"openai":     "OPENAI_API_KEY",
	"anthropic":  "ANTHROPIC_API_KEY",
	"openrouter": "OPENROUTER_API_KEY",
}
