package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/provider/registry"
	"conch/backend/service"
	"conch/backend/store"
)

// noKeys is a keyring that is not there, so keys go to the store.
type noKeys struct{}

func (noKeys) Get(string) (string, error) { return "", errors.New("no secret service") }
func (noKeys) Set(string, string) error   { return errors.New("no secret service") }
func (noKeys) Delete(string) error        { return errors.New("no secret service") }

// setupProviders starts a gateway over a registry that finds nothing on
// its own but OPENAI_API_KEY=sk-env-key-0001.
func setupProviders(t *testing.T) (*env, *store.Bolt) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	reg, err := registry.New(context.Background(), registry.Config{
		Store: st, Keyring: noKeys{},
		Getenv: func(k string) string {
			if k == "OPENAI_API_KEY" {
				return "sk-env-key-0001"
			}
			return ""
		},
		LookPath:   func(string) (string, error) { return "", errors.New("not found") },
		OllamaURL:  gone.URL + "/v1",
		HTTPClient: &http.Client{Transport: loopbackTransport{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	srv := httptest.NewUnstartedServer(nil)
	gw, err := gateway.New(gateway.Config{API: service.New(service.Config{Providers: reg}), Bus: bus, Token: token}, srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = gw
	srv.Start()
	t.Cleanup(func() {
		bus.Close()
		srv.Close()
		_ = st.Close()
	})
	return &env{srv: srv, base: srv.URL, bus: bus}, st
}

// loopbackTransport refuses every host but this computer: the env
// provider must never reach the real API from a test.
type loopbackTransport struct{}

func (loopbackTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h := r.URL.Hostname(); h != "127.0.0.1" && h != "localhost" {
		return nil, errors.New("tests reach only loopback")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestProvidersAPI(t *testing.T) {
	e, st := setupProviders(t)
	models := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[{"id":"m1"},{"id":"m2"}]}`))
	}))
	defer models.Close()

	resp, b := e.do(t, req{method: "GET", path: "/api/providers"})
	if resp.StatusCode != 200 {
		t.Fatalf("GET: %d %s", resp.StatusCode, b)
	}
	list := decodeAs[service.ProviderList](t, b)
	// The env's OpenAI, and the shell, built in and listed like any other.
	if len(list.Providers) != 2 || list.Providers[0].ID != "openai" || list.Providers[0].Source != registry.FromEnv || !list.Providers[0].KeySet ||
		list.Providers[1].ID != "shell" || list.Providers[1].Source != registry.BuiltIn || !list.Providers[1].CanAsk {
		t.Fatalf("list = %s", b)
	}

	body := `{"kind":"openai","name":"Local","baseUrl":"` + models.URL + `/v1","apiKey":"sk-put-key-0002","model":"m2"}`
	resp, b = e.do(t, req{method: "PUT", path: "/api/providers/local", body: body})
	if resp.StatusCode != 200 {
		t.Fatalf("PUT: %d %s", resp.StatusCode, b)
	}
	l := decodeAs[registry.Listing](t, b)
	if l.ID != "local" || !l.Ready || l.Models.Default != "m2" || len(l.Models.List) != 2 || !l.KeySet ||
		l.KeyStorage != "store" || l.KeyNotice == "" || l.Source != registry.Configured || l.Category != "local-model" {
		t.Fatalf("PUT answer = %s", b)
	}
	resp, b = e.do(t, req{method: "GET", path: "/api/providers"})
	if resp.StatusCode != 200 || len(decodeAs[service.ProviderList](t, b).Providers) != 3 {
		t.Fatalf("GET after PUT: %d %s", resp.StatusCode, b)
	}
	// An edit is a PUT without the key: the name and model change, the key stays.
	resp, b = e.do(t, req{method: "PUT", path: "/api/providers/local", body: `{"kind":"openai","name":"Local box","baseUrl":"` + models.URL + `/v1","model":"m1"}`})
	if l := decodeAs[registry.Listing](t, b); resp.StatusCode != 200 || l.Name != "Local box" || l.Models.Default != "m1" || !l.KeySet {
		t.Fatalf("edit: %d %s", resp.StatusCode, b)
	}
	if k, err := st.ProviderKey("local"); err != nil || k != "sk-put-key-0002" {
		t.Errorf("the edit lost the key: %q, %v", k, err)
	}
	resp, b = e.do(t, req{method: "DELETE", path: "/api/providers/shell"})
	wantError(t, resp, b, http.StatusConflict, "conflict")
	resp, b = e.do(t, req{method: "PUT", path: "/api/providers/shell", body: `{"kind":"anthropic"}`})
	wantError(t, resp, b, http.StatusBadRequest, "invalid")
	for _, k := range []string{"sk-env-key-0001", "sk-put-key-0002"} {
		if strings.Contains(string(b), k) {
			t.Errorf("GET shows a key: %s", b)
		}
	}
	if k, err := st.ProviderKey("local"); err != nil || k != "sk-put-key-0002" {
		t.Errorf("stored key = %q, %v", k, err)
	}

	resp, b = e.do(t, req{method: "DELETE", path: "/api/providers/local"})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do(t, req{method: "DELETE", path: "/api/providers/local"})
	wantError(t, resp, b, http.StatusNotFound, "not_found")
	resp, b = e.do(t, req{method: "DELETE", path: "/api/providers/openai"})
	wantError(t, resp, b, http.StatusConflict, "conflict")
	if !strings.Contains(string(b), "OPENAI_API_KEY") {
		t.Errorf("409 does not say why: %s", b)
	}
	resp, b = e.do(t, req{method: "GET", path: "/api/providers/local"})
	wantError(t, resp, b, http.StatusNotFound, "not_found")
}

func TestProvidersPutRefused(t *testing.T) {
	e, _ := setupProviders(t)
	long := strings.Repeat("k", registry.MaxKeyLen+1)
	for _, tc := range []struct {
		name, path, body, contentType string
		status                        int
		code                          string
	}{
		{"unknown kind", "/api/providers/x", `{"kind":"llama"}`, "", 400, "invalid"},
		{"missing kind", "/api/providers/x", `{}`, "", 400, "invalid"},
		{"relative baseUrl", "/api/providers/x", `{"kind":"openai","baseUrl":"/v1"}`, "", 400, "invalid"},
		{"file baseUrl", "/api/providers/x", `{"kind":"openai","baseUrl":"file:///etc/passwd"}`, "", 400, "invalid"},
		{"no baseUrl", "/api/providers/x", `{"kind":"openai"}`, "", 400, "invalid"},
		{"key too long", "/api/providers/x", `{"kind":"anthropic","apiKey":"` + long + `"}`, "", 400, "invalid"},
		{"key for a cli", "/api/providers/x", `{"kind":"codex","apiKey":"sk-1234567"}`, "", 400, "invalid"},
		{"bad preset", "/api/providers/x", `{"kind":"openai","preset":"nope"}`, "", 400, "invalid"},
		{"bad id", "/api/providers/UPPER", `{"kind":"anthropic"}`, "", 400, "invalid"},
		{"unknown field", "/api/providers/x", `{"kind":"anthropic","key":"sk"}`, "", 400, "unknown_field"},
		{"wrong type", "/api/providers/x", `{"kind":"anthropic","apiKey":5}`, "", 400, "bad_json"},
		{"not json", "/api/providers/x", `{"kind":`, "", 400, "bad_json"},
		{"not json content type", "/api/providers/x", `{"kind":"anthropic"}`, "text/plain", 415, "not_json"},
		{"nested path", "/api/providers/x/y", `{"kind":"anthropic"}`, "", 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := e.do(t, req{method: "PUT", path: tc.path, body: tc.body, contentType: tc.contentType})
			wantError(t, resp, b, tc.status, tc.code)
		})
	}
	resp, b := e.do(t, req{method: "POST", path: "/api/providers"})
	wantError(t, resp, b, http.StatusMethodNotAllowed, "method_not_allowed")
	resp, b = e.do(t, req{method: "GET", path: "/api/providers"})
	if n := len(decodeAs[service.ProviderList](t, b).Providers); resp.StatusCode != 200 || n != 2 {
		t.Fatalf("refused PUTs changed the list: %s", b)
	}
}

func TestProvidersUnavailable(t *testing.T) {
	e := setup(t)
	resp, b := e.do(t, req{method: "GET", path: "/api/providers"})
	wantError(t, resp, b, http.StatusNotFound, "not_found")
}

// TestFound: GET /api/found says what Conch found on its own, keys by
// their variable's name only; it is GET only.
func TestFound(t *testing.T) {
	e, _ := setupProviders(t)
	resp, b := e.do(t, req{method: "GET", path: "/api/found"})
	if resp.StatusCode != 200 {
		t.Fatalf("GET: %d %s", resp.StatusCode, b)
	}
	f := decodeAs[registry.Found](t, b)
	if len(f.Keys) != 1 || f.Keys[0].Variable != "OPENAI_API_KEY" || f.Keys[0].Provider != "openai" || f.Ollama.Running || f.Ollama.Address == "" || f.CLIs == nil || len(f.CLIs) != 0 {
		t.Fatalf("found = %s", b)
	}
	if strings.Contains(string(b), "sk-env-key-0001") {
		t.Errorf("the report shows a key: %s", b)
	}
	resp, b = e.do(t, req{method: "POST", path: "/api/found"})
	wantError(t, resp, b, http.StatusMethodNotAllowed, "method_not_allowed")
	resp, b = e.do(t, req{method: "GET", path: "/api/found"})
	if resp.StatusCode != 200 {
		t.Fatalf("GET again: %d %s", resp.StatusCode, b)
	}
	resp, b = setup(t).do(t, req{method: "GET", path: "/api/found"})
	wantError(t, resp, b, http.StatusNotFound, "not_found")
}
