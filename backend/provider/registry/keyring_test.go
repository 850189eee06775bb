//go:build unix

package registry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/provider/registry"
	"conch/backend/store"
	"conch/backend/testrig/secrettest"
)

// These tests run Conch's keyring (registry.System) against a real Secret
// Service: gnome-keyring-daemon on a private session bus.

// realKeyring points the session at e and gives b the OS keyring.
func realKeyring(t *testing.T, b *bundle, e *secrettest.Env) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", e.Addr)
	b.cfg.Keyring = registry.System{}
}

// within runs f and fails the test when it has not returned in a minute,
// which only a call waiting for something that never comes takes.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s never returned", what)
	}
}

// rawHolds reports whether the database file's bytes hold s anywhere.
func rawHolds(t *testing.T, path, s string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), s)
}

func TestKeyInARealKeyring(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, "")
	e.Keyring(t, true)
	b := setup(t)
	realKeyring(t, b, e)
	r := open(t, b.cfg)
	if r.KeyStorage() != registry.InKeyring {
		t.Fatalf("KeyStorage = %q with a working keyring", r.KeyStorage())
	}
	ctx := context.Background()
	k := "sk-keyring-secret-77"
	l, err := r.Put(ctx, "openrouter", registry.PutRequest{Kind: "openai", APIKey: &k})
	if err != nil {
		t.Fatal(err)
	}
	if !l.KeySet || l.KeyStorage != registry.InKeyring || l.KeyNotice != "" || l.Preset != "openrouter" {
		t.Errorf("listing = %+v", l)
	}
	if got, ok := e.Lookup(t, registry.KeyringService, "openrouter"); !ok || got != k {
		t.Errorf("the keyring holds %q, %v", got, ok)
	}
	if _, err := b.st.ProviderKey("openrouter"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the store holds the key too: %v", err)
	}
	if rawHolds(t, b.path, k) {
		t.Error("the database file holds the key")
	}
	// A key filed by another client (or by go-keyring, as Conch did
	// before) under the same attributes is read.
	e.Store(t, registry.KeyringService, "elsewhere", "sk-from-elsewhere")
	if got, err := (registry.System{}).Get("elsewhere"); err != nil || got != "sk-from-elsewhere" {
		t.Errorf("Get of a key secret-tool filed = %q, %v", got, err)
	}
	// Leaving apiKey out keeps it; "" forgets it.
	l, err = r.Put(ctx, "openrouter", registry.PutRequest{Kind: "openai", Name: "OR"})
	if err != nil || !l.KeySet || l.Name != "OR" {
		t.Errorf("put without a key: %+v, %v", l, err)
	}
	empty := ""
	l, err = r.Put(ctx, "openrouter", registry.PutRequest{Kind: "openai", APIKey: &empty})
	if err != nil || l.KeySet || l.KeyStorage != "" {
		t.Errorf("put with an empty key: %+v, %v", l, err)
	}
	if _, ok := e.Lookup(t, registry.KeyringService, "openrouter"); ok {
		t.Error("the forgotten key is still in the keyring")
	}
	if _, err := r.Put(ctx, "openrouter", registry.PutRequest{Kind: "openai", APIKey: &k}); err != nil {
		t.Fatal(err)
	}
	// A new registry over the same store (a restart) reads the key back.
	r = open(t, b.cfg)
	if l, err := r.Get(ctx, "openrouter"); err != nil || !l.KeySet || l.KeyStorage != registry.InKeyring {
		t.Errorf("after a restart: %+v, %v", l, err)
	}
	if err := r.Delete("openrouter"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Lookup(t, registry.KeyringService, "openrouter"); ok {
		t.Error("delete left the key in the keyring")
	}
}

// A keyring locked while Conch runs, on a desktop whose prompter would
// ask for the password: a key to keep goes to the store at once with the
// notice that says why, and one in the keyring is not forgotten until it
// is unlocked. Nothing waits for the prompt.
func TestLockedKeyringNeverWaitsForThePrompt(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, secrettest.Display(t))
	daemon := e.Keyring(t, true)
	b := setup(t)
	realKeyring(t, b, e)
	r := open(t, b.cfg)
	ctx := context.Background()
	k1, k2 := "sk-before-the-lock-1", "sk-after-the-lock-2"
	if l, err := r.Put(ctx, "first", registry.PutRequest{Kind: "anthropic", APIKey: &k1}); err != nil || l.KeyStorage != registry.InKeyring {
		t.Fatalf("put before the lock: %+v, %v", l, err)
	}
	e.Lock(t)
	var l registry.Listing
	var err error
	within(t, "Put on a locked keyring", func() {
		l, err = r.Put(ctx, "second", registry.PutRequest{Kind: "anthropic", APIKey: &k2})
	})
	if err != nil || !l.KeySet || l.KeyStorage != registry.InStore || l.KeyNotice != registry.LockedNotice {
		t.Fatalf("put on a locked keyring: %+v, %v; want the key in the store with the locked notice", l, err)
	}
	if got, err := b.st.ProviderKey("second"); err != nil || got != k2 {
		t.Errorf("the store holds %q, %v", got, err)
	}
	within(t, "Delete on a locked keyring", func() { err = r.Delete("first") })
	if !errors.Is(err, registry.ErrLocked) {
		t.Fatalf("delete of a key in a locked keyring: %v, want ErrLocked", err)
	}
	if _, err := r.Get(ctx, "first"); err != nil {
		t.Errorf("the refused delete removed the provider: %v", err)
	}
	if recs, err := b.st.ProviderConfigs(); err != nil || len(recs) != 2 {
		t.Errorf("the refused delete changed the store: %+v, %v", recs, err)
	}
	// A provider whose key is in the store is deleted all the same.
	within(t, "Delete of a stored key on a locked keyring", func() { err = r.Delete("second") })
	if err != nil {
		t.Errorf("delete of a provider with its key in the store: %v", err)
	}
	// Conch started while it is locked keeps keys in the store, and does
	// not forget the one in the keyring either.
	within(t, "New on a locked keyring", func() { r = open(t, b.cfg) })
	if r.KeyStorage() != registry.InStore {
		t.Errorf("KeyStorage = %q on a locked keyring", r.KeyStorage())
	}
	k4 := "sk-started-locked-4"
	if l, err := r.Put(ctx, "fourth", registry.PutRequest{Kind: "anthropic", APIKey: &k4}); err != nil ||
		l.KeyStorage != registry.InStore || l.KeyNotice != registry.LockedNotice {
		t.Errorf("put after a start on a locked keyring: %+v, %v", l, err)
	}
	within(t, "Delete after a start on a locked keyring", func() { err = r.Delete("first") })
	if !errors.Is(err, registry.ErrLocked) {
		t.Fatalf("delete of a key in a keyring locked since the start: %v, want ErrLocked", err)
	}
	// Unlocked (the daemon started again with the password), the same
	// registry files the next key there, as the notice promised, and the
	// key in the keyring can go.
	daemon.Stop()
	e.Keyring(t, true)
	k3 := "sk-after-the-unlock-3"
	if l, err := r.Put(ctx, "third", registry.PutRequest{Kind: "anthropic", APIKey: &k3}); err != nil || l.KeyStorage != registry.InKeyring || l.KeyNotice != "" {
		t.Errorf("put once unlocked: %+v, %v", l, err)
	}
	if l, err := r.Get(ctx, "fourth"); err != nil || l.KeyStorage != registry.InStore || l.KeyNotice != registry.MoveNotice {
		t.Errorf("a key left in the store once the keyring answers: %+v, %v", l, err)
	}
	if err := r.Delete("first"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Lookup(t, registry.KeyringService, "first"); ok {
		t.Error("delete left the key in the keyring")
	}
}

// A keyring that stops answering while Conch runs (its daemon hangs, here
// stopped with SIGSTOP): a key to keep goes to the store once the call
// gives up, deleting a provider whose key it holds is refused, and a
// registry started meanwhile finds no keyring.
func TestAHungKeyringCostsAKeyOnlyItsTimeout(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, "")
	daemon := e.Keyring(t, true)
	b := setup(t)
	realKeyring(t, b, e)
	r := open(t, b.cfg)
	ctx := context.Background()
	k1, k2 := "sk-before-the-hang-1", "sk-during-the-hang-2"
	if l, err := r.Put(ctx, "first", registry.PutRequest{Kind: "anthropic", APIKey: &k1}); err != nil || l.KeyStorage != registry.InKeyring {
		t.Fatalf("put before the hang: %+v, %v", l, err)
	}
	daemon.Freeze(t)
	var l registry.Listing
	var err error
	within(t, "Put on a hung keyring", func() {
		l, err = r.Put(ctx, "second", registry.PutRequest{Kind: "anthropic", APIKey: &k2})
	})
	if err != nil || l.KeyStorage != registry.InStore || l.KeyNotice == "" {
		t.Fatalf("put on a hung keyring: %+v, %v; want the key in the store with a notice", l, err)
	}
	if got, err := b.st.ProviderKey("second"); err != nil || got != k2 {
		t.Errorf("the store holds %q, %v", got, err)
	}
	within(t, "Delete on a hung keyring", func() { err = r.Delete("first") })
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("delete of a key in a hung keyring: %v, want it refused for the timeout", err)
	}
	within(t, "New on a hung keyring", func() { r = open(t, b.cfg) })
	if r.KeyStorage() != registry.InStore {
		t.Errorf("KeyStorage = %q on a hung keyring", r.KeyStorage())
	}
}

// A session bus with no Secret Service on it: keys go to the store with
// the notice.
func TestKeyFallbackWithoutASecretService(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, "")
	b := setup(t)
	realKeyring(t, b, e)
	r := open(t, b.cfg)
	if r.KeyStorage() != registry.InStore {
		t.Fatalf("KeyStorage = %q without a Secret Service", r.KeyStorage())
	}
	checkStoreFallback(t, b, r)
}

// A session bus address where nothing listens.
func TestKeyFallbackWithADeadBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	b := setup(t)
	b.cfg.Keyring = registry.System{}
	r := open(t, b.cfg)
	if r.KeyStorage() != registry.InStore {
		t.Fatalf("KeyStorage = %q without a bus", r.KeyStorage())
	}
	checkStoreFallback(t, b, r)
}

// TestNoSessionBus: without a D-Bus session the Secret Service is not
// asked at all (asking would autolaunch a bus), and keys go to the store.
func TestNoSessionBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // no systemd user bus there
	b := setup(t)
	b.cfg.Keyring = registry.System{}
	r := open(t, b.cfg)
	if r.KeyStorage() != registry.InStore {
		t.Fatalf("KeyStorage = %q without a session bus", r.KeyStorage())
	}
}
