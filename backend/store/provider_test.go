package store

import (
	"errors"
	"testing"
)

func TestProvidersReopen(t *testing.T) {
	s, path := openTest(t)
	cfgs := []ProviderConfig{
		{ID: "work", Kind: "openai", Name: "Work", BaseURL: "http://127.0.0.1:9/v1", KeyStorage: "store", CreatedAt: epoch, UpdatedAt: epoch},
		{ID: "claude", Kind: "anthropic", Name: "Claude", CreatedAt: epoch, UpdatedAt: epoch},
	}
	for _, c := range cfgs {
		if err := s.PutProviderConfig(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutProviderKey("work", "sk-secret"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.ProviderConfigs()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "claude" || got[1] != cfgs[0] {
		t.Fatalf("providers after reopen = %+v", got)
	}
	if key, err := s.ProviderKey("work"); err != nil || key != "sk-secret" {
		t.Fatalf("key = %q, %v", key, err)
	}
	if _, err := s.ProviderKey("claude"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("key of a provider without one: %v, want ErrNotFound", err)
	}
	if err := s.DeleteProviderConfig("work"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ProviderKey("work"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting a provider left its key: %v", err)
	}
	if err := s.DeleteProviderConfig("work"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteProviderKey("claude"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
}
