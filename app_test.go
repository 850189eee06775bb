package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"conch/backend/errcode"
	"conch/backend/gateway"
	"conch/backend/search"
	"conch/backend/service"
	"conch/backend/startstop"
	"conch/backend/taskrun"
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

// The gateway `conch serve` starts after the app keeps the same promises,
// and answers the API while it runs.
func TestTheGatewayKeepsTheLifecycle(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	ctx := context.Background()
	a, err := openApp(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	listen := func() net.Listener {
		ln, _, err := gateway.Listen("127.0.0.1:0", false)
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	unstarted, err := newGateway(a, listen(), nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	unstarted.Stop() // before Start: lets the listener go
	unstarted.Stop()
	if err := unstarted.Start(ctx); err == nil {
		t.Fatal("a stopped gateway started")
	}
	if _, err := net.Dial("tcp", unstarted.ln.Addr().String()); err == nil {
		t.Fatal("a gateway stopped before it started still listens")
	}

	gw, err := startGateway(ctx, a, listen(), nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(ctx); err == nil {
		t.Fatal("the gateway started twice without an error")
	}
	req, _ := http.NewRequest(http.MethodGet, gw.base+"/api/about", nil)
	req.Header.Set("Authorization", "Bearer "+gw.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/about answered %s", res.Status)
	}
	if _, err := os.Stat(gw.urlPath); err != nil {
		t.Fatalf("the gateway's address is not recorded: %v", err)
	}
	gw.Stop()
	gw.Stop()
	if _, err := os.Stat(gw.urlPath); err == nil {
		t.Fatal("the gateway's address is still recorded after Stop")
	}
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the gateway still serves after Stop")
	}
}

// A command's output is searchable once it has finished, through the app
// as it is wired (runner → bus → index → service).
func TestATasksOutputIsFoundOnceItFinishes(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	a, err := openApp(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	tk, err := a.svc.CreateTask(taskrun.CreateRequest{Text: "echo quasar-$((40+2))", Options: taskrun.Options{Cwd: t.TempDir(), Mode: "auto"}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := a.svc.Search(service.SearchQuery{Q: "quasar-42", Kind: search.KindOutput})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 1 && res.Hits[0].Task == tk.ID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task's output was not found: %+v", res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := a.svc.Search(service.SearchQuery{Q: "x", From: "yesterday"}); !errors.Is(err, errcode.ErrInvalid) {
		t.Fatalf("a bad from gave %v; want invalid", err)
	}
}
