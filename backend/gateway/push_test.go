package gateway_test

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/push"
	"conch/backend/service"
)

// setupPush starts a gateway serving Web Push's routes over a home's key
// and book, and the page's service worker.
func setupPush(t *testing.T) (*env, *push.Book) {
	t.Helper()
	home := t.TempDir()
	keys, err := push.LoadKeys(home)
	if err != nil {
		t.Fatal(err)
	}
	book, err := push.OpenBook(home, false)
	if err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	srv := httptest.NewUnstartedServer(nil)
	gw, err := gateway.New(gateway.Config{
		API: service.New(service.Config{PushKeys: keys, PushBook: book}), Bus: bus, Token: token,
		Assets: fstest.MapFS{
			"index.html": {Data: []byte("<!doctype html><title>Conch</title>")},
			"sw.js":      {Data: []byte("self.addEventListener('push', () => {});")},
		},
	}, srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = gw
	srv.Start()
	t.Cleanup(func() { bus.Close(); srv.Close() })
	return &env{srv: srv, base: srv.URL, bus: bus}, book
}

func subscriptionJSON(t *testing.T, endpoint string) string {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	enc := base64.RawURLEncoding
	// As PushSubscription.toJSON() gives it.
	return fmt.Sprintf(`{"endpoint":%q,"expirationTime":null,"keys":{"p256dh":%q,"auth":%q}}`,
		endpoint, enc.EncodeToString(k.PublicKey().Bytes()), enc.EncodeToString(auth))
}

func TestPushKeyAndServiceWorker(t *testing.T) {
	e, _ := setupPush(t)
	resp, b := e.do(t, req{method: "GET", path: "/api/push/key"})
	var k service.PushKey
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &k) != nil {
		t.Fatalf("GET /api/push/key: %d %s", resp.StatusCode, b)
	}
	if raw, err := base64.RawURLEncoding.DecodeString(k.PublicKey); err != nil || len(raw) != 65 || raw[0] != 4 {
		t.Fatalf("publicKey %q is not an uncompressed P-256 point", k.PublicKey)
	}
	resp, b = e.do(t, req{method: "GET", path: "/api/push/key", noToken: true})
	wantError(t, resp, b, http.StatusUnauthorized, "unauthorized")
	resp, b = e.do(t, req{method: "PUT", path: "/api/push/key"})
	wantError(t, resp, b, http.StatusMethodNotAllowed, "method_not_allowed")

	// The service worker needs no token (a browser fetches it on its own)
	// and is always checked for updates.
	resp, b = e.do(t, req{method: "GET", path: "/sw.js", noToken: true})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "push") {
		t.Fatalf("GET /sw.js: %d %s", resp.StatusCode, b)
	}
	for name, want := range map[string]string{"Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "no-cache", "Service-Worker-Allowed": "/"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("/sw.js %s = %q, want %q", name, got, want)
		}
	}
}

func TestPushSubscriptions(t *testing.T) {
	e, book := setupPush(t)
	sub := subscriptionJSON(t, "https://push.example.net/wpush/v2/one")
	resp, b := e.do(t, req{method: "POST", path: "/api/push/subscriptions", body: sub})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do(t, req{method: "POST", path: "/api/push/subscriptions", body: sub})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST again: %d %s", resp.StatusCode, b)
	}
	if l := book.List(); len(l) != 1 || l[0].Endpoint != "https://push.example.net/wpush/v2/one" {
		t.Fatalf("book %+v", l)
	}
	bad := []struct{ body, ct, code string }{
		{subscriptionJSON(t, "http://push.example.net/x"), "", "invalid"},
		{subscriptionJSON(t, "http://127.0.0.1:9/x"), "", "invalid"}, // loopback http only behind the switch
		{`{"endpoint":"https://push.example.net/x","keys":{"p256dh":"AAAA","auth":"AAAA"}}`, "", "invalid"},
		{`{"endpoint":"https://push.example.net/x","keys":{}}`, "", "invalid"},
		{`{"endpoint":"https://push.example.net/x","addedAt":"2026-01-01T00:00:00Z","keys":{}}`, "", "invalid"},
		{`{"endpoint":"https://push.example.net/x","extra":1}`, "", "unknown_field"},
		{`{"endpoint":`, "", "bad_json"},
		{`{"endpoint":7}`, "", "bad_json"},
		{sub, "text/plain", "not_json"},
	}
	for _, c := range bad {
		resp, b := e.do(t, req{method: "POST", path: "/api/push/subscriptions", body: c.body, contentType: c.ct})
		status := http.StatusBadRequest
		if c.code == "not_json" {
			status = http.StatusUnsupportedMediaType
		}
		wantError(t, resp, b, status, c.code)
	}
	del := `{"endpoint":"https://push.example.net/wpush/v2/one"}`
	resp, b = e.do(t, req{method: "DELETE", path: "/api/push/subscriptions", body: del})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do(t, req{method: "DELETE", path: "/api/push/subscriptions", body: del})
	wantError(t, resp, b, http.StatusNotFound, "not_found")
	resp, b = e.do(t, req{method: "DELETE", path: "/api/push/subscriptions", body: `{}`})
	wantError(t, resp, b, http.StatusBadRequest, "invalid")
	resp, b = e.do(t, req{method: "GET", path: "/api/push/subscriptions"})
	wantError(t, resp, b, http.StatusMethodNotAllowed, "method_not_allowed")
}

// TestPushSubscriptionsFromTwoClientsAtOnce: one browser subscribing from
// two pages at once is kept once (one 201, the other 200); removing it
// from two at once removes it once (one 204, the other 404).
func TestPushSubscriptionsFromTwoClientsAtOnce(t *testing.T) {
	e, book := setupPush(t)
	sub := subscriptionJSON(t, "https://push.example.net/wpush/v2/twice")
	statuses := func(r req) map[int]int {
		var mu sync.Mutex
		var wg sync.WaitGroup
		got := map[int]int{}
		for range 2 {
			wg.Go(func() {
				resp, _ := e.do(t, r)
				mu.Lock()
				got[resp.StatusCode]++
				mu.Unlock()
			})
		}
		wg.Wait()
		return got
	}
	if got := statuses(req{method: "POST", path: "/api/push/subscriptions", body: sub}); got[http.StatusCreated] != 1 || got[http.StatusOK] != 1 {
		t.Fatalf("two POSTs at once: %v", got)
	}
	if len(book.List()) != 1 {
		t.Fatalf("book holds %d", len(book.List()))
	}
	if got := statuses(req{method: "DELETE", path: "/api/push/subscriptions", body: `{"endpoint":"https://push.example.net/wpush/v2/twice"}`}); got[http.StatusNoContent] != 1 || got[http.StatusNotFound] != 1 {
		t.Fatalf("two DELETEs at once: %v", got)
	}
}

// Without Web Push (a home whose key could not be read), the routes say so.
func TestPushUnavailable(t *testing.T) {
	e := setup(t)
	resp, b := e.do(t, req{method: "GET", path: "/api/push/key"})
	wantError(t, resp, b, http.StatusNotFound, "not_found")
	resp, b = e.do(t, req{method: "POST", path: "/api/push/subscriptions", body: subscriptionJSON(t, "https://push.example.net/x")})
	wantError(t, resp, b, http.StatusNotFound, "not_found")
}
