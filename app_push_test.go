package main

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"conch/backend/push"
	"conch/backend/taskrun"
)

// A finish is pushed once to a subscribed browser, through the app's own
// parts: the notifier decides, the bus tells, Web Push carries it.
func TestAFinishIsPushedToASubscribedBrowser(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv(PushLoopbackEnv, "1")
	got := make(chan http.Header, 8)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusCreated)
	}))
	defer rc.Close()
	a, err := openApp(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	k, _ := ecdh.P256().GenerateKey(rand.Reader)
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	enc := base64.RawURLEncoding
	if _, err := a.svc.SubscribePush(push.Subscription{Endpoint: rc.URL + "/push/1",
		Keys: push.SubscriptionKeys{P256dh: enc.EncodeToString(k.PublicKey().Bytes()), Auth: enc.EncodeToString(auth)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.svc.CreateTask(taskrun.CreateRequest{Text: "echo pushed", Options: taskrun.Options{Cwd: t.TempDir(), Mode: "auto"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		if h.Get("Topic") != "tasks" || h.Get("Content-Encoding") != "aes128gcm" {
			t.Fatalf("push headers %v", h)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no push came for the finish")
	}
	select {
	case h := <-got:
		t.Fatalf("a second push for one finish: %v", h)
	case <-time.After(500 * time.Millisecond):
	}
}
