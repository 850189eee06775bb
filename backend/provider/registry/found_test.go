package registry_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDetectSaysWhatItFound: keys in the environment (by name only),
// Ollama answering or not (with its models and where it was looked for),
// the CLIs on PATH as they stand, from a real server and real scripts.
func TestDetectSaysWhatItFound(t *testing.T) {
	b := setup(t)
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-found-0001"}
	b.cfg.Getenv = func(k string) string { return env[k] }
	ollama := fakeOllama(t)
	u, _ := url.Parse(ollama.URL)
	b.cfg.OllamaURL = closedURL(t) + "/v1"
	bin := t.TempDir()
	writeCLI(t, bin, "claude", "echo 'Not logged in · Please run /login' >&2\nexit 1\n")
	writeCLI(t, bin, "codex", "echo 'Logged in using ChatGPT'\n")
	b.cfg.LookPath = func(name string) (string, error) {
		p := filepath.Join(bin, name)
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
		return p, nil
	}
	r := open(t, b.cfg)

	f := r.Detect(context.Background())
	if f.Ollama.Running || len(f.Ollama.Models) != 0 {
		t.Errorf("ollama = %+v, want not running", f.Ollama)
	}
	if len(f.Keys) != 1 || f.Keys[0].Variable != "ANTHROPIC_API_KEY" || f.Keys[0].Provider != "anthropic" || f.Keys[0].Name != "Anthropic" {
		t.Errorf("keys = %+v", f.Keys)
	}
	if out, _ := json.Marshal(f); strings.Contains(string(out), "sk-ant-found-0001") {
		t.Errorf("the report shows a key: %s", out)
	}
	if len(f.CLIs) != 2 || f.CLIs[0].ID != "claude-code" || f.CLIs[0].Path != filepath.Join(bin, "claude") || f.CLIs[0].Ready || !strings.Contains(f.CLIs[0].Reason, "/login") || f.CLIs[1].ID != "codex" {
		t.Errorf("clis = %+v", f.CLIs)
	}

	// Ollama comes up at the address looked at: the next look finds it.
	b2 := setup(t)
	b2.cfg.OllamaURL = "http://" + u.Host + "/v1"
	r2 := open(t, b2.cfg)
	if _, ok := r2.Provider("ollama"); !ok {
		t.Fatal("ollama answering at start was not found")
	}
	f2 := r2.Detect(context.Background())
	if !f2.Ollama.Running || f2.Ollama.Address != u.Host || len(f2.Ollama.Models) != 2 {
		t.Errorf("ollama = %+v", f2.Ollama)
	}
}

// TestDetectFindsWhatStartedSince: Ollama started after Conch did is found
// by the next look, and becomes a provider.
func TestDetectFindsWhatStartedSince(t *testing.T) {
	b := setup(t)
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"qwen3:8b","object":"model"}]}`))
	}))
	t.Cleanup(srv.Close)
	b.cfg.OllamaURL = srv.URL + "/v1"
	r := open(t, b.cfg)
	if _, ok := r.Provider("ollama"); ok {
		t.Fatal("ollama found before it answered")
	}
	up.Store(true)
	if f := r.Detect(context.Background()); !f.Ollama.Running {
		t.Fatalf("ollama = %+v, want running", f.Ollama)
	}
	if _, ok := r.Provider("ollama"); !ok {
		t.Fatal("ollama found by Detect is not a provider")
	}
	if _, ok := r.Provider("shell"); !ok {
		t.Fatal("the shell went missing")
	}
}
