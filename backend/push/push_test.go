package push

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/task"
)

// browser is a user agent's side of a subscription: its keys, as a
// browser keeps them, and the subscription it hands the page.
type browser struct {
	key  *ecdh.PrivateKey
	auth []byte
}

func newBrowser(t *testing.T) browser {
	t.Helper()
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return browser{key: k, auth: auth}
}

func (b browser) subscription(endpoint string) Subscription {
	enc := base64.RawURLEncoding
	return Subscription{Endpoint: endpoint, Keys: SubscriptionKeys{P256dh: enc.EncodeToString(b.key.PublicKey().Bytes()), Auth: enc.EncodeToString(b.auth)}}
}

// delivery is one push as the receiver took it.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is a local RFC 8030 push service: it answers each push with
// the next of statuses (the last one from then on) and keeps what came.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []delivery
	arrived  chan struct{}
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{statuses: statuses, arrived: make(chan struct{}, 64)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{header: r.Header.Clone(), body: body})
		status := rc.statuses[min(len(rc.got), len(rc.statuses))-1]
		rc.mu.Unlock()
		w.WriteHeader(status)
		rc.arrived <- struct{}{}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) wait(t *testing.T, n int) []delivery {
	t.Helper()
	for range n {
		select {
		case <-rc.arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("the push service got %d of %d pushes", len(rc.deliveries()), n)
		}
	}
	return rc.deliveries()
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

type rig struct {
	home   string
	book   *Book
	keys   *Keys
	bus    *event.Bus
	sender *Sender
}

func setup(t *testing.T) rig {
	t.Helper()
	home := t.TempDir()
	book, err := OpenBook(home, true)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeys(home)
	if err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	s := New(Config{Book: book, Keys: keys, Bus: bus, Backoff: time.Millisecond, Attempts: 3, Subject: "mailto:test@example.com"})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		bus.Close()
	})
	return rig{home: home, book: book, keys: keys, bus: bus, sender: s}
}

func notice(kind event.NoticeKind, id string) event.Event {
	tk := task.Task{ID: id, ConversationID: "own-" + id, ParentConversationID: "parent-" + id}
	return event.Event{Type: event.TaskNotice, Task: &tk,
		Notice: &event.Notice{Kind: kind, Tag: "task-" + id, Title: "Tidy the README — done", Body: "3 files changed."}}
}

// TestPushReachesTheReceiver pushes a finish to a local push service,
// which decrypts it with the browser's keys and checks what RFC 8030 and
// RFC 8292 say it must carry.
func TestPushReachesTheReceiver(t *testing.T) {
	r := setup(t)
	rc := newReceiver(t, http.StatusCreated)
	b := newBrowser(t)
	if _, _, err := r.book.Add(b.subscription(rc.URL+"/push/one"), time.Now()); err != nil {
		t.Fatal(err)
	}
	r.bus.Publish(event.Event{Type: event.TaskChanged}) // not a notice: nothing is pushed for it
	r.bus.Publish(notice(event.NoticeFinished, "t1"))
	d := rc.wait(t, 1)[0]

	plain, err := decrypt(d.body, b.key, b.auth)
	if err != nil {
		t.Fatalf("the browser cannot read the push: %v", err)
	}
	var p Payload
	if err := json.Unmarshal(plain, &p); err != nil {
		t.Fatalf("payload %q: %v", plain, err)
	}
	want := Payload{Kind: event.NoticeFinished, Tag: "task-t1", Title: "Tidy the README — done", Body: "3 files changed.", TaskID: "t1", Chat: "parent-t1"}
	if p != want {
		t.Errorf("payload = %+v, want %+v", p, want)
	}
	for name, want := range map[string]string{"Topic": "tasks", "TTL": "86400", "Urgency": "normal",
		"Content-Encoding": "aes128gcm", "Content-Type": "application/octet-stream"} {
		if got := d.header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	auth := d.header.Get("Authorization")
	claims, err := verifyAuthorization(auth, rc.URL, time.Now())
	if err != nil {
		t.Fatalf("Authorization %q: %v", auth, err)
	}
	if claims["sub"] != "mailto:test@example.com" {
		t.Errorf("sub = %v", claims["sub"])
	}
	if !strings.HasSuffix(auth, ", k="+r.keys.Public()) {
		t.Errorf("Authorization %q does not name the home's key %s", auth, r.keys.Public())
	}
	// Another key's signature does not pass: the check can fail.
	other, _ := LoadKeys(t.TempDir())
	forged := strings.Replace(auth, r.keys.Public(), other.Public(), 1)
	if _, err := verifyAuthorization(forged, rc.URL, time.Now()); err == nil {
		t.Error("a header naming another key verified")
	}
}

func TestQuestionIsUrgentAndShortLived(t *testing.T) {
	r := setup(t)
	rc := newReceiver(t, http.StatusCreated)
	b := newBrowser(t)
	if _, _, err := r.book.Add(b.subscription(rc.URL+"/push/q"), time.Now()); err != nil {
		t.Fatal(err)
	}
	r.bus.Publish(notice(event.NoticeQuestion, "t2"))
	d := rc.wait(t, 1)[0]
	if d.header.Get("Topic") != "approvals" || d.header.Get("Urgency") != "high" || d.header.Get("TTL") != "3600" {
		t.Errorf("headers = %v", d.header)
	}
}

// TestGoneRemovesTheSubscription: a push service that answers 410 (or 404)
// has forgotten the browser, so the book forgets it too, on disk.
func TestGoneRemovesTheSubscription(t *testing.T) {
	for _, status := range []int{http.StatusGone, http.StatusNotFound} {
		r := setup(t)
		gone, kept := newReceiver(t, status), newReceiver(t, http.StatusCreated)
		b := newBrowser(t)
		_, _, _ = r.book.Add(b.subscription(gone.URL+"/push/gone"), time.Now())
		_, _, _ = r.book.Add(b.subscription(kept.URL+"/push/kept"), time.Now())
		r.bus.Publish(notice(event.NoticeFinished, "t3"))
		gone.wait(t, 1)
		kept.wait(t, 1)
		waitFor(t, func() bool { return len(r.book.List()) == 1 })
		if l := r.book.List(); l[0].Endpoint != kept.URL+"/push/kept" {
			t.Errorf("%d: kept %v", status, l)
		}
		again, err := OpenBook(r.home, true)
		if err != nil || len(again.List()) != 1 {
			t.Errorf("%d: the book on disk holds %v, %v", status, again.List(), err)
		}
		if n := len(gone.deliveries()); n != 1 {
			t.Errorf("%d: pushed %d times to a gone subscription", status, n)
		}
	}
}

// TestRetriesAreBounded: 429 and 5xx are tried again after a wait, up to
// Attempts times; the subscription stays.
func TestRetriesAreBounded(t *testing.T) {
	r := setup(t)
	busy := newReceiver(t, http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusCreated)
	b := newBrowser(t)
	_, _, _ = r.book.Add(b.subscription(busy.URL+"/push/busy"), time.Now())
	if err := r.sender.Push(context.Background(), r.book.List()[0], PayloadOf(notice(event.NoticeFinished, "t4"))); err != nil {
		t.Fatalf("Push after 429 and 503: %v", err)
	}
	if n := len(busy.deliveries()); n != 3 {
		t.Errorf("tries = %d, want 3", n)
	}

	down := newReceiver(t, http.StatusInternalServerError)
	sub := b.subscription(down.URL + "/push/down")
	err := r.sender.Push(context.Background(), sub, PayloadOf(notice(event.NoticeFinished, "t5")))
	if tries := len(down.deliveries()); err == nil || tries != 3 {
		t.Errorf("Push to a service always 500: %v after %d tries, want an error after 3", err, tries)
	}

	refused := newReceiver(t, http.StatusBadRequest)
	if err := r.sender.Push(context.Background(), b.subscription(refused.URL+"/x"), PayloadOf(notice(event.NoticeFinished, "t6"))); err == nil || len(refused.deliveries()) != 1 {
		t.Errorf("a 400 is not tried again: %v, %d tries", err, len(refused.deliveries()))
	}
}

// TestStopCutsAWaitShort: a push waiting out a long backoff ends with Stop.
func TestStopCutsAWaitShort(t *testing.T) {
	home := t.TempDir()
	book, _ := OpenBook(home, true)
	keys, _ := LoadKeys(home)
	bus := event.NewBus()
	defer bus.Close()
	s := New(Config{Book: book, Keys: keys, Bus: bus, Backoff: time.Hour})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Error("a second Start was taken")
	}
	busy := newReceiver(t, http.StatusServiceUnavailable)
	_, _, _ = book.Add(newBrowser(t).subscription(busy.URL+"/p"), time.Now())
	bus.Publish(notice(event.NoticeFinished, "t7"))
	busy.wait(t, 1)
	done := make(chan struct{})
	go func() { s.Stop(); s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waited on a backoff")
	}
	New(Config{Book: book, Keys: keys, Bus: bus}).Stop() // before Start: safe
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
