package service

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"conch/backend/provider/registry"
	"conch/backend/store"
)

// TestDoctorProviders: the doctor's providers check lists the shell and
// every provider of the registry, each with its reason, the shell once.
func TestDoctorProviders(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"data":[{"id":"qwen3:8b"}]}`))
	}))
	defer ollama.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	reg, err := registry.New(context.Background(), registry.Config{
		Store: st, Keyring: noKeyring{}, Getenv: func(string) string { return "" },
		LookPath:  func(string) (string, error) { return "", errors.New("not on PATH") },
		OllamaURL: ollama.URL + "/v1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Put(context.Background(), "away", registry.PutRequest{Kind: "openai", Name: "Away", BaseURL: gone.URL + "/v1"}); err != nil {
		t.Fatal(err)
	}
	ps := doctorProviders(func() (bool, string) { return true, "" }, reg, "")
	if len(ps) != 3 || ps[0].ID != "shell" || ps[1].ID != "away" || ps[2].ID != "ollama" {
		t.Fatalf("providers = %+v", ps)
	}
	if ps[1].Ready || ps[1].Reason == "" || !ps[2].Ready {
		t.Errorf("providers = %+v, want away not ready with a reason and ollama ready", ps)
	}
	// The shell is the registry's, listed once, as GET /api/providers lists
	// it: here the registry finds no bash on its PATH.
	if ps[0].Ready || ps[0].Reason != "bash was not found on PATH" {
		t.Errorf("shell = %+v, want the registry's", ps[0])
	}
	if ps := doctorProviders(func() (bool, string) { return false, "bash was not found" }, nil, "a record is corrupt"); len(ps) != 2 || ps[0].Ready || ps[1].Reason != "a record is corrupt" {
		t.Errorf("without a registry: %+v", ps)
	}
}

type noKeyring struct{}

func (noKeyring) Get(string) (string, error) { return "", errors.New("no keyring") }
func (noKeyring) Set(string, string) error   { return errors.New("no keyring") }
func (noKeyring) Delete(string) error        { return errors.New("no keyring") }
