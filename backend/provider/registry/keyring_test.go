package registry_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/zalando/go-keyring"

	"conch/backend/provider/registry"
	"conch/backend/store"
)

// TestKeyInKeyring uses go-keyring's own mock: with a keyring that works,
// the key is filed there and nowhere in the database. The mock replaces
// go-keyring's backend for the rest of this test binary, so this file's
// test runs after the one that needs the real backend (file order).
func TestKeyInKeyring(t *testing.T) {
	keyring.MockInit()
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/mock") // the mock never dials it
	b := setup(t)
	b.cfg.Keyring = registry.System{}
	r := open(t, b.cfg)
	if r.KeyStorage() != registry.InKeyring {
		t.Fatalf("KeyStorage = %q", r.KeyStorage())
	}
	k := "sk-keyring-secret-77"
	l, err := r.Put(context.Background(), "openrouter", registry.PutRequest{Kind: "openai", APIKey: &k})
	if err != nil {
		t.Fatal(err)
	}
	if !l.KeySet || l.KeyStorage != registry.InKeyring || l.KeyNotice != "" || l.Preset != "openrouter" {
		t.Errorf("listing = %+v", l)
	}
	if got, err := keyring.Get(registry.KeyringService, "openrouter"); err != nil || got != k {
		t.Errorf("keyring holds %q, %v", got, err)
	}
	if _, err := b.st.ProviderKey("openrouter"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the store holds the key too: %v", err)
	}
	var db bytes.Buffer
	if _, err := b.st.Backup(&db); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(db.Bytes(), []byte(k)) {
		t.Error("the database file holds the key")
	}
	// Leaving apiKey out keeps it; "" forgets it.
	l, err = r.Put(context.Background(), "openrouter", registry.PutRequest{Kind: "openai", Name: "OR"})
	if err != nil || !l.KeySet || l.Name != "OR" {
		t.Errorf("put without a key: %+v, %v", l, err)
	}
	empty := ""
	l, err = r.Put(context.Background(), "openrouter", registry.PutRequest{Kind: "openai", APIKey: &empty})
	if err != nil || l.KeySet || l.KeyStorage != "" {
		t.Errorf("put with an empty key: %+v, %v", l, err)
	}
	if _, err := keyring.Get(registry.KeyringService, "openrouter"); !errors.Is(err, keyring.ErrNotFound) {
		t.Errorf("the forgotten key is still in the keyring: %v", err)
	}
	if _, err := r.Put(context.Background(), "openrouter", registry.PutRequest{Kind: "openai", APIKey: &k}); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete("openrouter"); err != nil {
		t.Fatal(err)
	}
	if _, err := keyring.Get(registry.KeyringService, "openrouter"); !errors.Is(err, keyring.ErrNotFound) {
		t.Errorf("delete left the key in the keyring: %v", err)
	}
}
