package push

import (
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"conch/backend/errcode"
)

// BookFile is the subscriptions' file name inside the home folder.
const BookFile = "push-subscriptions.json"

// MaxSubscriptions bounds the book: a browser added past it pushes out the
// one added longest ago (a browser that was wiped never says goodbye).
const MaxSubscriptions = 32

// maxEndpoint bounds an endpoint's length; push services' are far shorter.
const maxEndpoint = 2048

// Errors the book returns; each carries its errcode.
var (
	// ErrInvalid is returned for a subscription that could never be
	// pushed to (an endpoint that is not https, keys of the wrong size).
	ErrInvalid = errcode.ErrInvalid
	// ErrNotFound is returned when removing an endpoint the book lacks.
	ErrNotFound = errcode.New(errcode.NotFound, "no such push subscription")
)

// SubscriptionKeys are a subscription's keys as PushSubscription.toJSON() gives them: URL-safe
// base64 (with or without padding).
type SubscriptionKeys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

// Subscription is one browser's push subscription: where to push
// (endpoint, the browser's push service) and the keys to encrypt for.
type Subscription struct {
	Endpoint string           `json:"endpoint"`
	Keys     SubscriptionKeys `json:"keys"`
	// ExpirationTime is what the browser said (milliseconds since the
	// epoch, or null); kept, not acted on.
	ExpirationTime *int64 `json:"expirationTime,omitempty"`
	// AddedAt is when the book took it (set by the book).
	AddedAt time.Time `json:"addedAt"`
}

// decoded are a subscription's keys as bytes.
type decoded struct {
	public, auth []byte
}

// Check reports what is wrong with s, or nil: an endpoint must be an
// https URL (or, with loopback, an http one on a loopback address: the
// tests' push receiver), p256dh a P-256 point (65 bytes, uncompressed) and
// auth 16 bytes.
func Check(s Subscription, loopback bool) error {
	_, err := check(s, loopback)
	return err
}

func check(s Subscription, loopback bool) (decoded, error) {
	if s.Endpoint == "" || len(s.Endpoint) > maxEndpoint {
		return decoded{}, fmt.Errorf("%w: endpoint must be a URL of at most %d characters", ErrInvalid, maxEndpoint)
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return decoded{}, fmt.Errorf("%w: endpoint must be an absolute URL with a host and no user or fragment", ErrInvalid)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback && isLoopback(u.Hostname()):
	default:
		return decoded{}, fmt.Errorf("%w: endpoint must be an https URL", ErrInvalid)
	}
	pub, err := key(s.Keys.P256dh)
	if err != nil || len(pub) != 65 {
		return decoded{}, fmt.Errorf("%w: keys.p256dh must be a P-256 public key (65 bytes, URL-safe base64)", ErrInvalid)
	}
	if _, err := ecdh.P256().NewPublicKey(pub); err != nil {
		return decoded{}, fmt.Errorf("%w: keys.p256dh is not a point on P-256", ErrInvalid)
	}
	auth, err := key(s.Keys.Auth)
	if err != nil || len(auth) != 16 {
		return decoded{}, fmt.Errorf("%w: keys.auth must be 16 bytes (URL-safe base64)", ErrInvalid)
	}
	return decoded{public: pub, auth: auth}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// key decodes URL-safe base64, padded or not.
func key(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// Book is the browsers subscribed to this Conch, kept in a file of the
// home (0600: an endpoint is a capability to wake that browser). Every
// change is written whole before it is answered.
type Book struct {
	path     string
	loopback bool

	mu   sync.Mutex
	subs []Subscription // oldest first
}

// OpenBook reads the book in home (none yet: an empty one). With loopback,
// http endpoints on a loopback address are taken too (tests only).
func OpenBook(home string, loopback bool) (*Book, error) {
	b := &Book{path: filepath.Join(home, BookFile), loopback: loopback}
	raw, err := os.ReadFile(b.path)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read push subscriptions: %w", err)
	}
	var subs []Subscription
	if err := json.Unmarshal(raw, &subs); err != nil {
		return nil, fmt.Errorf("read push subscriptions %s: %w", b.path, err)
	}
	for _, s := range subs {
		// One that no longer passes (the switch for loopback is off now)
		// is left out, not pushed to.
		if Check(s, loopback) == nil && len(b.subs) < MaxSubscriptions {
			b.subs = append(b.subs, s)
		}
	}
	return b, nil
}

// Add keeps s, replacing the one with its endpoint (a browser that
// subscribed again has new keys); created says it is new. At
// MaxSubscriptions the one added longest ago goes.
func (b *Book) Add(s Subscription, now time.Time) (saved Subscription, created bool, err error) {
	if err := Check(s, b.loopback); err != nil {
		return Subscription{}, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	next := slices.Clone(b.subs)
	s.AddedAt = now.UTC()
	i := slices.IndexFunc(next, func(o Subscription) bool { return o.Endpoint == s.Endpoint })
	if i >= 0 {
		s.AddedAt = next[i].AddedAt
		next[i] = s
	} else {
		if len(next) >= MaxSubscriptions {
			next = next[len(next)-MaxSubscriptions+1:]
		}
		next = append(next, s)
	}
	if err := b.write(next); err != nil {
		return Subscription{}, false, err
	}
	b.subs = next
	return s, i < 0, nil
}

// Remove forgets the subscription of endpoint: ErrNotFound when it holds
// none (removed already, by another page or after a 410).
func (b *Book) Remove(endpoint string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.subs, func(o Subscription) bool { return o.Endpoint == endpoint })
	if i < 0 {
		return ErrNotFound
	}
	next := slices.Delete(slices.Clone(b.subs), i, i+1)
	if err := b.write(next); err != nil {
		return err
	}
	b.subs = next
	return nil
}

// List returns every subscription, oldest first.
func (b *Book) List() []Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.subs)
}

// write puts subs in the file whole: a temporary file, synced, renamed.
func (b *Book) write(subs []Subscription) error {
	if subs == nil {
		subs = []Subscription{}
	}
	raw, err := json.MarshalIndent(subs, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.path), ".push-subscriptions-*")
	if err != nil {
		return fmt.Errorf("write push subscriptions: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(raw)
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), b.path)
	}
	if err != nil {
		return fmt.Errorf("write push subscriptions: %w", err)
	}
	return nil
}
