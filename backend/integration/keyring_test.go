//go:build unix

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"conch/backend/provider/registry"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/chatcompletions"
	"conch/backend/testrig/secrettest"
)

// `conch serve` with a real Secret Service (gnome-keyring-daemon on a
// private session bus) or none: where a provider's key goes, and that the
// provider still signs its requests with it after a restart.

// keyProvider is a provider as GET /api/providers/:id lists it.
type keyProvider struct {
	KeySet     bool   `json:"keySet"`
	KeyStorage string `json:"keyStorage"`
	KeyNotice  string `json:"keyNotice"`
	Ready      bool   `json:"ready"`
}

// keyModel is a scripted model server that keeps every request, to read
// the key each one was signed with.
func keyModel(t *testing.T) *chatcompletions.Server {
	return chatcompletions.New(t, func(modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "ok"} },
		chatcompletions.Models("key-model"))
}

// signedSince reports whether a request after the first n carried key,
// as the openai provider sends it.
func signedSince(srv *chatcompletions.Server, n int, key string) bool {
	reqs := srv.Requests()
	for _, r := range reqs[min(n, len(reqs)):] {
		if r.Header.Get("Authorization") == "Bearer "+key {
			return true
		}
	}
	return false
}

// answer is s.call with a deadline: a request Conch never answers (one
// waiting on a keyring's unlock prompt) fails the test instead of hanging
// it.
func (s *server) answer(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	r, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+s.token)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// putKey connects provider id to srv with key and returns the listing.
func (s *server) putKey(t *testing.T, id string, srv *chatcompletions.Server, key string) keyProvider {
	t.Helper()
	var l keyProvider
	body := fmt.Sprintf(`{"kind":"openai","baseUrl":%q,"model":"key-model","apiKey":%q}`, srv.BaseURL(), key)
	if code := s.answer(t, "PUT", "/api/providers/"+id, body, &l); code != 200 {
		t.Fatalf("PUT %s: %d %+v", id, code, l)
	}
	return l
}

// stop ends the server as a person quitting it would.
func (s *server) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_, _ = s.cmd.Process.Wait()
}

// dbHolds reports whether the raw bytes of home's database hold s.
func dbHolds(t *testing.T, home, s string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), s)
}

func TestAProviderKeyLivesInTheKeyringAcrossARestart(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, "")
	e.Keyring(t, true)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", e.Addr)
	model := keyModel(t)
	home := t.TempDir()
	s := start(t, home)
	key := "sk-real-keyring-4f1c9a"
	if l := s.putKey(t, "kr", model, key); !l.KeySet || l.KeyStorage != registry.InKeyring || l.KeyNotice != "" || !l.Ready {
		t.Fatalf("PUT with a key: %+v, want it in the keyring", l)
	}
	if got, ok := e.Lookup(t, registry.KeyringService, "kr"); !ok || got != key {
		t.Fatalf("the keyring holds %q, %v", got, ok)
	}
	if dbHolds(t, home, key) {
		t.Fatal("conch.db holds the key")
	}
	s.stop(t)
	if dbHolds(t, home, key) {
		t.Fatal("conch.db holds the key once Conch stopped")
	}

	n := len(model.Requests())
	s = start(t, home)
	var l keyProvider
	if code := s.answer(t, "GET", "/api/providers/kr", "", &l); code != 200 || !l.KeySet || l.KeyStorage != registry.InKeyring || !l.Ready {
		t.Fatalf("after the restart: %d %+v", code, l)
	}
	if !signedSince(model, n, key) {
		t.Fatal("after the restart the model server never got the key from the keyring")
	}

	if code := s.answer(t, "DELETE", "/api/providers/kr", "", nil); code != 204 {
		t.Fatalf("DELETE: %d", code)
	}
	if _, ok := e.Lookup(t, registry.KeyringService, "kr"); ok {
		t.Fatal("the key is still in the keyring after its provider was deleted")
	}
}

// The keyring locked while Conch runs, on a desktop whose prompter would
// show an unlock prompt nobody answers: the key goes to the store with
// the notice, at once; a key in the keyring is not forgotten while it is
// locked; and Conch started with it locked still finds the stored key.
func TestALockedKeyringSendsTheKeyToTheStoreWithoutWaiting(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, secrettest.Display(t))
	daemon := e.Keyring(t, true)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", e.Addr)
	model := keyModel(t)
	home := t.TempDir()
	s := start(t, home)
	inRing, inStore := "sk-kept-in-the-ring-1", "sk-kept-in-the-store-2"
	if l := s.putKey(t, "ring", model, inRing); l.KeyStorage != registry.InKeyring {
		t.Fatalf("PUT before the lock: %+v", l)
	}
	e.Lock(t)
	l := s.putKey(t, "locked", model, inStore)
	if !l.KeySet || l.KeyStorage != registry.InStore || l.KeyNotice != registry.LockedNotice {
		t.Fatalf("PUT on a locked keyring: %+v, want the key in the store with the notice", l)
	}
	if !dbHolds(t, home, inStore) {
		t.Fatal("the key is not in conch.db")
	}
	var refused struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if code := s.answer(t, "DELETE", "/api/providers/ring", "", &refused); code != 409 || refused.Error.Code != "conflict" ||
		!strings.Contains(refused.Error.Message, "locked") {
		t.Fatalf("DELETE of a provider whose key is in the locked keyring: %d %+v", code, refused)
	}
	s.stop(t)

	n := len(model.Requests())
	s = start(t, home)
	if code := s.answer(t, "GET", "/api/providers/locked", "", &l); code != 200 || l.KeyStorage != registry.InStore || l.KeyNotice != registry.LockedNotice {
		t.Fatalf("after a restart on the locked keyring: %d %+v", code, l)
	}
	if !signedSince(model, n, inStore) {
		t.Fatal("after the restart the model server never got the stored key")
	}
	l = s.putKey(t, "later", model, "sk-later-3")
	if l.KeyStorage != registry.InStore || l.KeyNotice != registry.LockedNotice {
		t.Fatalf("PUT with Conch started on a locked keyring: %+v", l)
	}
	s.stop(t)

	// Unlocked (the daemon started again with the password), the key in
	// the keyring works and goes with its provider.
	daemon.Stop()
	e.Keyring(t, true)
	n = len(model.Requests())
	s = start(t, home)
	if code := s.answer(t, "GET", "/api/providers/ring", "", &l); code != 200 || l.KeyStorage != registry.InKeyring || !signedSince(model, n, inRing) {
		t.Fatalf("the key in the unlocked keyring: %d %+v", code, l)
	}
	if code := s.answer(t, "DELETE", "/api/providers/ring", "", nil); code != 204 {
		t.Fatalf("DELETE once unlocked: %d", code)
	}
	if _, ok := e.Lookup(t, registry.KeyringService, "ring"); ok {
		t.Fatal("the key is still in the keyring after its provider was deleted")
	}
}

// A session bus with no Secret Service on it (a server, a desktop without
// a keyring): the key goes to the store with the notice, and works after a
// restart.
func TestWithoutAKeyringTheKeyGoesToTheStoreWithTheNotice(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, "")
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", e.Addr)
	model := keyModel(t)
	home := t.TempDir()
	s := start(t, home)
	key := "sk-no-keyring-here-5"
	if l := s.putKey(t, "plain", model, key); !l.KeySet || l.KeyStorage != registry.InStore || l.KeyNotice != registry.StoreNotice {
		t.Fatalf("PUT without a keyring: %+v, want the key in the store with the notice", l)
	}
	s.stop(t)
	if !dbHolds(t, home, key) {
		t.Fatal("the key is not in conch.db")
	}
	n := len(model.Requests())
	s = start(t, home)
	var l keyProvider
	if code := s.answer(t, "GET", "/api/providers/plain", "", &l); code != 200 || l.KeyNotice != registry.StoreNotice || !signedSince(model, n, key) {
		t.Fatalf("after the restart: %d %+v", code, l)
	}
}

// Clients saving and removing one provider's key at once, against the real
// keyring: each request is answered (200, 204, or 404 for a provider
// already gone), never a 5xx, and afterwards the keyring and the listing
// agree: a provider that is there has its last saved key in the keyring,
// one that is gone left none behind; conch.db holds none of the keys.
func TestKeysSavedAndRemovedAtOnceLeaveTheKeyringAndListingAgreeing(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, "")
	e.Keyring(t, true)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", e.Addr)
	model := keyModel(t)
	home := t.TempDir()
	s := start(t, home)
	const clients, rounds = 4, 8
	errs := make(chan string, clients*rounds)
	done := make(chan struct{})
	for c := range clients {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range rounds {
				var code int
				var err error
				if (c+i)%3 == 2 {
					code, err = s.try("DELETE", "/api/providers/race", "", nil)
					if err == nil && code != 204 && code != 404 {
						errs <- fmt.Sprintf("DELETE: %d", code)
					}
				} else {
					body := fmt.Sprintf(`{"kind":"openai","baseUrl":%q,"model":"key-model","apiKey":"sk-race-%d-%d"}`, model.BaseURL(), c, i)
					code, err = s.try("PUT", "/api/providers/race", body, nil)
					if err == nil && code != 200 {
						errs <- fmt.Sprintf("PUT: %d", code)
					}
				}
				if err != nil {
					errs <- err.Error()
				}
			}
		}()
	}
	for range clients {
		<-done
	}
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	var l keyProvider
	code := s.answer(t, "GET", "/api/providers/race", "", &l)
	got, inRing := e.Lookup(t, registry.KeyringService, "race")
	switch {
	case code == 404 && inRing:
		t.Errorf("the provider is gone but the keyring still holds %q", got)
	case code == 200 && (!l.KeySet || l.KeyStorage != registry.InKeyring || !inRing):
		t.Errorf("the provider is listed %+v, the keyring holds %q (%v)", l, got, inRing)
	case code != 200 && code != 404:
		t.Errorf("GET after the race: %d", code)
	}
	if code == 200 {
		n := len(model.Requests())
		s.stop(t)
		s = start(t, home)
		if code := s.answer(t, "GET", "/api/providers/race", "", &l); code != 200 || !l.Ready {
			t.Fatalf("after a restart: %d %+v", code, l)
		}
		if !signedSince(model, n, got) {
			t.Errorf("after a restart the provider does not sign with the key the keyring holds (%q)", got)
		}
	}
	if dbHolds(t, home, "sk-race-") {
		t.Error("conch.db holds one of the keys")
	}
}
