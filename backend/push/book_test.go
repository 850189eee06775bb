package push

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"conch/backend/errcode"
)

func TestCheck(t *testing.T) {
	b := newBrowser(t)
	good := b.subscription("https://push.example.net/wpush/v2/abc")
	bad := func(f func(*Subscription)) Subscription { s := good; f(&s); return s }
	offCurve := append([]byte{4}, bytes.Repeat([]byte{1}, 64)...)
	long := make([]byte, maxEndpoint)
	for i := range long {
		long[i] = 'a'
	}
	cases := []struct {
		name     string
		s        Subscription
		loopback bool
		ok       bool
	}{
		{"https", good, false, true},
		{"padded keys", bad(func(s *Subscription) { s.Keys.P256dh += "="; s.Keys.Auth += "==" }), false, true},
		{"http elsewhere", bad(func(s *Subscription) { s.Endpoint = "http://push.example.net/x" }), true, false},
		{"loopback http without the switch", bad(func(s *Subscription) { s.Endpoint = "http://127.0.0.1:9/x" }), false, false},
		{"loopback http with the switch", bad(func(s *Subscription) { s.Endpoint = "http://127.0.0.1:9/x" }), true, true},
		{"localhost with the switch", bad(func(s *Subscription) { s.Endpoint = "http://localhost:9/x" }), true, true},
		{"no endpoint", bad(func(s *Subscription) { s.Endpoint = "" }), false, false},
		{"too long", bad(func(s *Subscription) { s.Endpoint = "https://a.example/" + string(long) }), false, false},
		{"relative", bad(func(s *Subscription) { s.Endpoint = "/push" }), false, false},
		{"user", bad(func(s *Subscription) { s.Endpoint = "https://me:pw@push.example.net/x" }), false, false},
		{"ftp", bad(func(s *Subscription) { s.Endpoint = "ftp://push.example.net/x" }), false, false},
		{"short p256dh", bad(func(s *Subscription) { s.Keys.P256dh = s.Keys.P256dh[:40] }), false, false},
		{"p256dh off the curve", bad(func(s *Subscription) { s.Keys.P256dh = base64.RawURLEncoding.EncodeToString(offCurve) }), false, false},
		{"p256dh not base64", bad(func(s *Subscription) { s.Keys.P256dh = "!!" + s.Keys.P256dh[2:] }), false, false},
		{"auth of 15 bytes", bad(func(s *Subscription) { s.Keys.Auth = "AAAAAAAAAAAAAAAAAAAA" }), false, false},
		{"no auth", bad(func(s *Subscription) { s.Keys.Auth = "" }), false, false},
	}
	for _, c := range cases {
		err := Check(c.s, c.loopback)
		if (err == nil) != c.ok {
			t.Errorf("%s: Check = %v, want ok %v", c.name, err, c.ok)
		}
		if err != nil && errcode.Of(err) != errcode.Invalid {
			t.Errorf("%s: code %s, want invalid", c.name, errcode.Of(err))
		}
	}
}

func TestBookKeepsAndBounds(t *testing.T) {
	home := t.TempDir()
	book, err := OpenBook(home, false)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	first := b.subscription("https://push.example.net/0")
	s, created, err := book.Add(first, time.Unix(100, 0))
	if err != nil || !created {
		t.Fatalf("Add = %v, %v", created, err)
	}
	// The same browser again, with new keys: replaced, not added.
	again := newBrowser(t).subscription(first.Endpoint)
	s2, created, err := book.Add(again, time.Unix(200, 0))
	if err != nil || created || s2.Keys != again.Keys || !s2.AddedAt.Equal(s.AddedAt) {
		t.Fatalf("Add again = %+v, %v, %v", s2, created, err)
	}
	for i := 1; i <= MaxSubscriptions; i++ {
		if _, _, err := book.Add(b.subscription(fmt.Sprintf("https://push.example.net/%d", i)), time.Unix(int64(300+i), 0)); err != nil {
			t.Fatal(err)
		}
	}
	l := book.List()
	if len(l) != MaxSubscriptions || l[0].Endpoint != "https://push.example.net/1" {
		t.Fatalf("a full book holds %d, the oldest %s; want %d from /1", len(l), l[0].Endpoint, MaxSubscriptions)
	}
	fi, err := os.Stat(filepath.Join(home, BookFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the book's file: %v, %v", fi, err)
	}
	reopened, err := OpenBook(home, false)
	if err != nil || len(reopened.List()) != MaxSubscriptions {
		t.Fatalf("reopened: %d, %v", len(reopened.List()), err)
	}
	if err := book.Remove("https://push.example.net/1"); err != nil {
		t.Fatal(err)
	}
	if err := book.Remove("https://push.example.net/1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Remove twice = %v, want ErrNotFound", err)
	}
	if _, _, err := book.Add(Subscription{Endpoint: "http://push.example.net/x"}, time.Now()); errcode.Of(err) != errcode.Invalid {
		t.Fatalf("Add of a bad one = %v", err)
	}
	if err := os.WriteFile(filepath.Join(home, BookFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBook(home, false); err == nil {
		t.Error("a broken book opened")
	}
}

// TestBookTwoClientsAtOnce: the same browser subscribing from two pages at
// once is kept once; a removal from two at once takes effect once and the
// other is told it is gone.
func TestBookTwoClientsAtOnce(t *testing.T) {
	book, _ := OpenBook(t.TempDir(), false)
	sub := newBrowser(t).subscription("https://push.example.net/twice")
	var wg sync.WaitGroup
	created := make(chan bool, 8)
	for range 8 {
		wg.Go(func() {
			_, c, err := book.Add(sub, time.Now())
			if err != nil {
				t.Error(err)
			}
			created <- c
		})
	}
	wg.Wait()
	close(created)
	n := 0
	for c := range created {
		if c {
			n++
		}
	}
	if n != 1 || len(book.List()) != 1 {
		t.Fatalf("created %d times, book holds %d", n, len(book.List()))
	}
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- book.Remove(sub.Endpoint) })
	}
	wg.Wait()
	close(errs)
	removed := 0
	for err := range errs {
		switch {
		case err == nil:
			removed++
		case !errors.Is(err, ErrNotFound):
			t.Error(err)
		}
	}
	if removed != 1 || len(book.List()) != 0 {
		t.Fatalf("removed %d times, %d left", removed, len(book.List()))
	}
}

func TestKeysAreMadeOnceAndKept(t *testing.T) {
	home := t.TempDir()
	var wg sync.WaitGroup
	pubs := make(chan string, 6)
	for range 6 {
		wg.Go(func() {
			k, err := LoadKeys(home)
			if err != nil {
				t.Error(err)
				return
			}
			pubs <- k.Public()
		})
	}
	wg.Wait()
	close(pubs)
	first := ""
	for p := range pubs {
		if first == "" {
			first = p
		}
		if p != first {
			t.Fatalf("two keys made at once: %s and %s", first, p)
		}
	}
	fi, err := os.Stat(filepath.Join(home, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key's file: %v, %v", fi, err)
	}
	k, err := LoadKeys(home)
	if err != nil || k.Public() != first {
		t.Fatalf("reloaded key %s, %v; want %s", k.Public(), err, first)
	}
	if raw := mustDecode(t, first); len(raw) != 65 || raw[0] != 4 {
		t.Errorf("public key is %d bytes, want an uncompressed P-256 point", len(raw))
	}
	if err := os.WriteFile(filepath.Join(home, KeyFile), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeys(home); err == nil {
		t.Error("a broken key file loaded")
	}
}

func mustDecode(t *testing.T, s string) []byte {
	raw, err := key(s)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
