package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"conch/backend/startstop"
)

// Every long-lived part keeps the same promises: Stop is safe before Start
// and twice, Start twice is an error, and the app starts them in the order
// docs/ARCHITECTURE.md gives.
func TestThePartsKeepOneLifecycle(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "") // no desktop: the plain notifier
	ctx := context.Background()

	a, err := newApp(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.parts.Parts() {
		p.Stop() // before Start
		p.Stop() // and twice
		if err := p.Start(ctx); err == nil {
			t.Errorf("%s started after it was stopped", p.Name)
		}
	}
	a.close()
	a.close()

	b, err := openApp(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	for _, p := range b.parts.Parts() {
		if err := p.Start(ctx); err == nil {
			t.Errorf("%s started twice without an error", p.Name)
		}
	}
	if err := b.parts.Start(ctx); !errors.Is(err, startstop.ErrStarted) {
		t.Errorf("the app's parts started twice: %v", err)
	}
	if _, err := b.chats.List("", "", 0); err != nil {
		t.Errorf("the chats do not answer once started: %v", err)
	}
}

func TestTheDocumentedStartOrderIsTheCodes(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	a, err := newApp(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	want := "Start order: " + strings.Join(a.parts.Names(), ", ") + "."
	if !strings.Contains(string(doc), want) {
		t.Fatalf("docs/ARCHITECTURE.md does not say %q", want)
	}
}
