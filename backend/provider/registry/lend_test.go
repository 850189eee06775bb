package registry_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"conch/backend/event"
	"conch/backend/provider/registry"
	"conch/backend/store"
)

// A provider the person connected is lendable with its key; a lent one is
// a provider on the runner for as long as a task holds it, and its key
// goes with the last task that let go.
func TestLendAndLetGo(t *testing.T) {
	b := setup(t)
	desk := open(t, b.cfg)
	key := "sk-lend-0001"
	if _, err := desk.Put(context.Background(), "scripted", registry.PutRequest{Kind: "openai", Name: "Scripted", BaseURL: "http://127.0.0.1:9/v1", APIKey: &key, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	rec, k, err := desk.Lendable("scripted")
	if err != nil || k != key || rec.Kind != "openai" || rec.BaseURL != "http://127.0.0.1:9/v1" || rec.KeyStorage != "" {
		t.Fatalf("Lendable = %+v %q %v", rec, k, err)
	}
	if _, _, err := desk.Lendable("shell"); !errors.Is(err, registry.ErrNotLendable) {
		t.Errorf("Lendable(shell) = %v, want ErrNotLendable", err)
	}

	rb := setup(t)
	run := open(t, rb.cfg)
	if err := run.Lend("task-1", store.ProviderConfig{ID: "x", Kind: "claude-code"}, ""); !errors.Is(err, registry.ErrNotLendable) {
		t.Errorf("lending a CLI = %v, want ErrNotLendable", err)
	}
	for _, owner := range []string{"task-1", "task-2"} {
		if err := run.Lend(owner, rec, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := run.Provider("scripted"); !ok || !slices.Contains(run.IDs(), "scripted") {
		t.Fatal("the lent provider is not there")
	}
	got, err := run.Get(context.Background(), "scripted")
	if err != nil || got.Source != registry.Lent || !got.KeySet {
		t.Errorf("the lent listing: %+v %v", got, err)
	}
	run.Unlend("task-1")
	if _, ok := run.Provider("scripted"); !ok {
		t.Fatal("let go of while task-2 still holds it")
	}
	if b := run.Borrowers(); len(b) != 1 || b[0] != "task-2" {
		t.Errorf("borrowers %v, want task-2", b)
	}
	run.Unlend("task-2")
	if _, ok := run.Provider("scripted"); ok || len(run.Borrowers()) != 0 {
		t.Fatal("still there after the last task let go")
	}
	// Nothing lent was ever written to the runner's store or keyring.
	if recs, err := rb.st.ProviderConfigs(); err != nil || len(recs) != 0 {
		t.Errorf("the runner's store holds %d providers (%v)", len(recs), err)
	}
	if _, err := rb.cfg.Keyring.Get("scripted"); err == nil {
		t.Error("the runner's keyring holds the key")
	}
}

// Connecting and removing a provider is announced on the bus, so every
// page lists the providers another client changed.
func TestChangesAreAnnounced(t *testing.T) {
	b := setup(t)
	bus := event.NewBus()
	b.cfg.Bus = bus
	r := open(t, b.cfg)
	sub := bus.Subscribe(8)
	defer sub.Close()
	if _, err := r.Put(context.Background(), "scripted", registry.PutRequest{Kind: "openai", BaseURL: "http://127.0.0.1:9/v1", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete("scripted"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"put", "delete"} {
		select {
		case e := <-sub.C():
			if e.Type != event.ProvidersChanged || e.ID != "scripted" {
				t.Errorf("after the %s: %+v", want, e)
			}
		default:
			t.Fatalf("no event after the %s", want)
		}
	}
}
