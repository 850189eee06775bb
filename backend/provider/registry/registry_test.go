package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zalando/go-keyring"

	"conch/backend/provider/registry"
	"conch/backend/store"
)

// loopbackOnly is an HTTP client that refuses every host but this
// computer, so a provider made from an env var never reaches a real API.
func loopbackOnly() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("tests reach only loopback, not %s", addr)
		}
		return dial(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}

// memKeyring is a keyring that works, in memory.
type memKeyring struct {
	mu   sync.Mutex
	keys map[string]string
}

func (m *memKeyring) Get(id string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if !ok {
		return "", keyring.ErrNotFound
	}
	return k, nil
}

func (m *memKeyring) Set(id, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[id] = key
	return nil
}

func (m *memKeyring) Delete(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[id]; !ok {
		return keyring.ErrNotFound
	}
	delete(m.keys, id)
	return nil
}

// noKeyring is a keyring that is not there, as on a machine without a
// Secret Service.
type noKeyring struct{}

func (noKeyring) Get(string) (string, error) { return "", errors.New("no secret service") }
func (noKeyring) Set(string, string) error   { return errors.New("no secret service") }
func (noKeyring) Delete(string) error        { return errors.New("no secret service") }

// fakeOllama answers /v1/models as Ollama does.
func fakeOllama(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen3:8b","object":"model","owned_by":"library"},{"id":"llama3.2:3b","object":"model","owned_by":"library"}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// closedURL is the address of a server that no longer listens.
func closedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u + "/v1"
}

// noCLIs finds nothing on PATH.
func noCLIs(string) (string, error) { return "", errors.New("not found") }

type bundle struct {
	st   *store.Bolt
	path string
	cfg  registry.Config
}

// setup opens a store in a temporary folder and a Config that reaches
// nothing outside this computer: no Ollama, no CLIs, no env keys.
func setup(t *testing.T) *bundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conch.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &bundle{st: st, path: path, cfg: registry.Config{
		Store:      st,
		Keyring:    &memKeyring{keys: map[string]string{}},
		Getenv:     func(string) string { return "" },
		LookPath:   noCLIs,
		OllamaURL:  closedURL(t),
		HTTPClient: loopbackOnly(),
	}}
}

func open(t *testing.T, cfg registry.Config) *registry.Registry {
	t.Helper()
	r, err := registry.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func byID(t *testing.T, ls []registry.Listing) map[string]registry.Listing {
	t.Helper()
	m := map[string]registry.Listing{}
	for _, l := range ls {
		m[l.ID] = l
	}
	return m
}

// writeCLI puts an executable script named name in dir.
func writeCLI(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestAssembly(t *testing.T) {
	b := setup(t)
	t.Setenv("OPENAI_API_KEY", "sk-env-openai-0001")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env-0002")
	t.Setenv("OPENROUTER_API_KEY", "sk-or-env-0003")
	b.cfg.Getenv = nil // the real environment, as set above
	b.cfg.OllamaURL = fakeOllama(t).URL + "/v1"
	bin := t.TempDir()
	writeCLI(t, bin, "claude", "echo 'Not logged in · Please run /login' >&2\nexit 1\n")
	b.cfg.LookPath = func(name string) (string, error) {
		p := filepath.Join(bin, name)
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
		return p, nil
	}
	r := open(t, b.cfg)

	want := []string{"anthropic", "claude-code", "ollama", "openai", "openrouter", "shell"}
	if got := r.IDs(); !slices.Equal(got, want) {
		t.Fatalf("IDs() = %v, want %v", got, want)
	}
	ls := r.List(context.Background())
	m := byID(t, ls)
	for id, src := range map[string]registry.Source{
		"anthropic": registry.FromEnv, "openai": registry.FromEnv, "openrouter": registry.FromEnv,
		"ollama": registry.Detected, "claude-code": registry.OnPath,
	} {
		if m[id].Source != src {
			t.Errorf("%s source = %q, want %q", id, m[id].Source, src)
		}
	}
	ollama := m["ollama"]
	if !ollama.Ready || ollama.Models.Default != "qwen3:8b" || len(ollama.Models.List) != 2 || ollama.Category != "local-model" || ollama.KeySet {
		t.Errorf("ollama = %+v", ollama)
	}
	claude := m["claude-code"]
	if claude.Ready || !strings.Contains(claude.Reason, "/login") || claude.Kind != "claude-code" {
		t.Errorf("claude-code = %+v, want not ready with the CLI's reason", claude)
	}
	for _, id := range []string{"openai", "anthropic", "openrouter"} {
		if l := m[id]; !l.KeySet || l.KeyStorage != "" || l.Ready {
			t.Errorf("%s = %+v, want a key set from the environment and not ready (no network)", id, l)
		}
	}
	if m["openrouter"].BaseURL != "https://openrouter.ai/api/v1" || m["openrouter"].Kind != "openai" {
		t.Errorf("openrouter = %+v", m["openrouter"])
	}
	out, _ := json.Marshal(ls)
	for _, k := range []string{"sk-env-openai-0001", "sk-ant-env-0002", "sk-or-env-0003"} {
		if strings.Contains(string(out), k) {
			t.Errorf("the listing shows a key: %s", out)
		}
	}
	p, ok := r.Provider("ollama")
	if !ok || p.Info(context.Background()).ID != "ollama" {
		t.Errorf("Provider(ollama) = %v, %v", p, ok)
	}
	if _, ok := r.Provider("nope"); ok {
		t.Error("Provider(nope) was found")
	}
}

func TestNothingFound(t *testing.T) {
	b := setup(t)
	r := open(t, b.cfg)
	if ids := r.IDs(); !slices.Equal(ids, []string{"shell"}) {
		t.Fatalf("IDs() = %v, want only the shell", ids)
	}
	if ls := r.List(context.Background()); len(ls) != 1 || ls[0].ID != "shell" || ls[0].Source != registry.BuiltIn || !ls[0].CanAsk {
		t.Fatalf("List = %#v, want only the built-in shell", ls)
	}
}

func TestPutValidation(t *testing.T) {
	b := setup(t)
	r := open(t, b.cfg)
	key := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		id   string
		req  registry.PutRequest
	}{
		{"unknown kind", "x", registry.PutRequest{Kind: "llama"}},
		{"no kind", "x", registry.PutRequest{}},
		{"bad id", "Not An Id", registry.PutRequest{Kind: "anthropic"}},
		{"id too long", strings.Repeat("a", 65), registry.PutRequest{Kind: "anthropic"}},
		{"relative url", "x", registry.PutRequest{Kind: "openai", BaseURL: "/v1"}},
		{"ftp url", "x", registry.PutRequest{Kind: "openai", BaseURL: "ftp://127.0.0.1/v1"}},
		{"no host", "x", registry.PutRequest{Kind: "openai", BaseURL: "http:///v1"}},
		{"credentials in url", "x", registry.PutRequest{Kind: "openai", BaseURL: "http://u:p@127.0.0.1/v1"}},
		{"openai without url or preset", "x", registry.PutRequest{Kind: "openai"}},
		{"unknown preset", "x", registry.PutRequest{Kind: "openai", Preset: "vllm"}},
		{"preset on anthropic", "x", registry.PutRequest{Kind: "anthropic", Preset: "openai"}},
		{"key too long", "x", registry.PutRequest{Kind: "anthropic", APIKey: key(strings.Repeat("k", registry.MaxKeyLen+1))}},
		{"key with a space", "x", registry.PutRequest{Kind: "anthropic", APIKey: key("sk one")}},
		{"key for a cli", "x", registry.PutRequest{Kind: "codex", APIKey: key("sk-123456")}},
		{"url for a cli", "x", registry.PutRequest{Kind: "gemini", BaseURL: "http://127.0.0.1/"}},
		{"the shell", "shell", registry.PutRequest{Kind: "anthropic"}},
		{"long name", "x", registry.PutRequest{Kind: "anthropic", Name: strings.Repeat("n", 81)}},
		{"model with a space", "x", registry.PutRequest{Kind: "anthropic", Model: "a b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.Put(context.Background(), tc.id, tc.req); !errors.Is(err, registry.ErrInvalid) {
				t.Fatalf("Put = %v, want ErrInvalid", err)
			}
		})
	}
	if ids := r.IDs(); !slices.Equal(ids, []string{"shell"}) {
		t.Fatalf("refused requests left providers: %v", ids)
	}
	if cs, _ := b.st.ProviderConfigs(); len(cs) != 0 {
		t.Fatalf("refused requests left records: %v", cs)
	}
}

func TestDelete(t *testing.T) {
	b := setup(t)
	t.Setenv("OPENAI_API_KEY", "sk-env-openai-0001")
	b.cfg.Getenv = nil
	r := open(t, b.cfg)
	if err := r.Delete("nope"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Delete(nope) = %v, want ErrNotFound", err)
	}
	if err := r.Delete("openai"); !errors.Is(err, registry.ErrConflict) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("Delete(openai from env) = %v, want ErrConflict naming the variable", err)
	}
	// Configuring the env one overrides it; deleting that brings it back.
	l, err := r.Put(context.Background(), "openai", registry.PutRequest{Kind: "openai", Name: "My OpenAI", Model: "gpt-5"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Source != registry.Configured || l.Preset != "openai" || !l.KeySet || l.Models.Default != "gpt-5" {
		t.Errorf("configured openai = %+v, want the preset and the env key", l)
	}
	if err := r.Delete("openai"); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(context.Background(), "openai")
	if err != nil || got.Source != registry.FromEnv || got.Name != "OpenAI" {
		t.Errorf("after delete: %+v, %v; want the env one back", got, err)
	}
}

func TestRestartKeepsConfigured(t *testing.T) {
	b := setup(t)
	kr := b.cfg.Keyring
	r := open(t, b.cfg)
	k := "sk-local-key-1234"
	if _, err := r.Put(context.Background(), "work", registry.PutRequest{
		Kind: "openai", Name: "Work", BaseURL: "http://127.0.0.1:1/v1", APIKey: &k, Model: "m", FastModel: "f",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Put(context.Background(), "claude", registry.PutRequest{Kind: "anthropic"}); err != nil {
		t.Fatal(err)
	}
	if err := b.st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(b.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	b.cfg.Store, b.cfg.Keyring = st, kr
	r = open(t, b.cfg)
	if ids := r.IDs(); !slices.Equal(ids, []string{"claude", "shell", "work"}) {
		t.Fatalf("IDs after restart = %v", ids)
	}
	m := byID(t, r.List(context.Background()))
	w := m["work"]
	if w.Name != "Work" || w.BaseURL != "http://127.0.0.1:1/v1" || !w.KeySet || w.KeyStorage != registry.InKeyring ||
		w.Models.Default != "m" || w.Models.Fast != "f" || w.Source != registry.Configured || w.Category != "local-model" {
		t.Errorf("work after restart = %+v", w)
	}
	if c := m["claude"]; c.KeySet || c.Ready || c.Kind != "anthropic" || c.Reason == "" {
		t.Errorf("claude after restart = %+v, want not ready for want of a key", c)
	}
}

// TestKeyFallback: without a keyring the key goes to the store's key
// bucket, never into the provider's record, and the listing says so.
func TestKeyFallback(t *testing.T) {
	b := setup(t)
	b.cfg.Keyring = noKeyring{}
	r := open(t, b.cfg)
	if r.KeyStorage() != registry.InStore {
		t.Fatalf("KeyStorage = %q", r.KeyStorage())
	}
	checkStoreFallback(t, b, r)
}

func checkStoreFallback(t *testing.T, b *bundle, r *registry.Registry) {
	t.Helper()
	k := "sk-fallback-secret-42"
	l, err := r.Put(context.Background(), "anthropic", registry.PutRequest{Kind: "anthropic", APIKey: &k})
	if err != nil {
		t.Fatal(err)
	}
	if !l.KeySet || l.KeyStorage != registry.InStore || l.KeyNotice != registry.StoreNotice {
		t.Errorf("listing = %+v, want the key in the store with the notice", l)
	}
	if got, err := b.st.ProviderKey("anthropic"); err != nil || got != k {
		t.Errorf("stored key = %q, %v", got, err)
	}
	cs, err := b.st.ProviderConfigs()
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(cs)
	if strings.Contains(string(rec), k) {
		t.Errorf("the provider record holds the key: %s", rec)
	}
	out, _ := json.Marshal(r.List(context.Background()))
	if strings.Contains(string(out), k) {
		t.Errorf("the listing shows the key: %s", out)
	}
	if err := r.Delete("anthropic"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.ProviderKey("anthropic"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the key outlived its provider: %v", err)
	}
}
