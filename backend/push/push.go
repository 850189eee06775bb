// Package push sends Web Push (RFC 8030) to the browsers that subscribed
// on `conch serve`'s page, so a task's finish or question reaches a
// browser whose page is closed. It keeps the VAPID key (RFC 8292) and the
// subscriptions in the home, encrypts each message for its browser
// (RFC 8291, aes128gcm) and follows the bus's task.notice events: the
// notifier decides what is told, once; this only carries it.
package push

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"conch/backend/event"
	"conch/backend/internal/brief"
	"conch/backend/startstop"
)

// Payload is what one push carries to the page's service worker (JSON,
// encrypted for its browser): the notification to show and the chat a
// click opens.
type Payload struct {
	Kind   event.NoticeKind `json:"kind"`
	Tag    string           `json:"tag"`
	Title  string           `json:"title"`
	Body   string           `json:"body"`
	TaskID string           `json:"taskId"`
	// Chat is the chat a click opens: the one the task came from, else
	// its own ("" for a command from the tasks page).
	Chat string `json:"chat,omitempty"`
}

// Headers a push carries, by kind: a finish under the tasks topic, a
// question under approvals (the person's notification topics' names).
// Topic lets the push service keep only the newest message of its topic
// for a browser that is offline; TTL is how long it keeps one at all (a
// question is denied after an hour); Urgency how eagerly it wakes a
// device.
var headers = map[event.NoticeKind]struct {
	topic, urgency string
	ttl            time.Duration
}{
	event.NoticeFinished: {"tasks", "normal", 24 * time.Hour},
	event.NoticeQuestion: {"approvals", "high", time.Hour},
}

// Config wires a Sender.
type Config struct {
	Book *Book
	Keys *Keys
	Bus  *event.Bus
	// Client posts to the push services (nil: one with a 10 s timeout).
	Client *http.Client
	// Subject is the VAPID contact (mailto: or https:).
	Subject string
	// Attempts bounds the tries of one push (default 4); Backoff is the
	// first wait after a 429 or 5xx (default 2 s), doubled each time and
	// at most a minute; a Retry-After the service sends is waited out
	// instead, up to the same minute.
	Attempts int
	Backoff  time.Duration
	Log      *slog.Logger
}

// queueSize bounds the notices waiting to be pushed; past it a notice is
// dropped (and logged) rather than waited for.
const queueSize = 64

// Sender is the long-lived part that pushes every task.notice to every
// subscribed browser. Nothing waits on it: the bus never blocks, and its
// queue drops what it cannot hold.
type Sender struct {
	cfg   Config
	queue chan Payload

	mu    sync.Mutex
	state startstop.State
}

// New returns a sender; call Start.
func New(cfg Config) *Sender {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Subject == "" {
		cfg.Subject = "mailto:conch@localhost"
	}
	if cfg.Attempts < 1 {
		cfg.Attempts = 4
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 2 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Sender{cfg: cfg, queue: make(chan Payload, queueSize)}
}

// Start follows the bus (subscribed before it returns, so a notice raised
// by a part started after it is not missed) and delivers in the
// background; Stop ends both.
func (s *Sender) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, err := s.state.Start(ctx)
	if err != nil {
		return fmt.Errorf("start web push: %w", err)
	}
	sub := s.cfg.Bus.Subscribe(256)
	s.state.WG.Add(2)
	go func() {
		defer s.state.WG.Done()
		s.follow(ctx, sub)
	}()
	go func() {
		defer s.state.WG.Done()
		s.deliver(ctx)
	}()
	return nil
}

// Stop ends following and delivering and waits; safe twice and before
// Start. A push in flight is cut off; the ones queued are dropped.
func (s *Sender) Stop() { s.state.Stop(&s.mu, nil) }

// follow queues every task.notice, resubscribing after a drop (the notices
// published meanwhile are lost: a push is a courtesy, the task page holds
// the truth).
func (s *Sender) follow(ctx context.Context, sub *event.Subscription) {
	for {
		select {
		case <-ctx.Done():
			sub.Close()
			return
		case <-sub.Done():
			sub.Close()
			if s.cfg.Bus.Closed() {
				return
			}
			sub = s.cfg.Bus.Subscribe(256)
		case ev := <-sub.C():
			if ev.Type != event.TaskNotice || ev.Notice == nil || ev.Task == nil {
				continue
			}
			p := PayloadOf(ev)
			select {
			case s.queue <- p:
			default:
				s.cfg.Log.Warn("web push queue full; notice dropped", "tag", p.Tag)
			}
		}
	}
}

// PayloadOf is the push a task.notice makes, its words clipped so that
// it always fits one message.
func PayloadOf(ev event.Event) Payload {
	chat := ev.Task.ParentConversationID
	if chat == "" {
		chat = ev.Task.ConversationID
	}
	return Payload{Kind: ev.Notice.Kind, Tag: ev.Notice.Tag, Title: brief.Clip(ev.Notice.Title, 200),
		Body: brief.Clip(ev.Notice.Body, 1000), TaskID: ev.Task.ID, Chat: chat}
}

func (s *Sender) deliver(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-s.queue:
			if s.cfg.Book == nil || s.cfg.Keys == nil {
				continue // Web Push is off (the home's key could not be read)
			}
			for _, sub := range s.cfg.Book.List() {
				if ctx.Err() != nil {
					return
				}
				if err := s.Push(ctx, sub, p); err != nil {
					s.cfg.Log.Info("web push not delivered", "tag", p.Tag, "err", err)
				}
			}
		}
	}
}

// errGone is a push service's word that the subscription no longer exists.
var errGone = errors.New("the push service says the subscription is gone; removed")

// Push sends p to one subscription: a 404 or 410 removes it from the book,
// a 429 or 5xx (or no answer) is tried again after a wait, up to
// Attempts times in all; anything else gives up at once.
func (s *Sender) Push(ctx context.Context, sub Subscription, p Payload) error {
	keys, err := check(sub, true)
	if err != nil {
		return err
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return err
	}
	body, err := encryptFor(plain, keys)
	if err != nil {
		return err
	}
	h := headers[p.Kind]
	wait := s.cfg.Backoff
	for attempt := 1; ; attempt++ {
		status, retryAfter, err := s.post(ctx, sub.Endpoint, body, h.topic, h.urgency, h.ttl)
		switch {
		case err == nil && status >= 200 && status < 300:
			return nil
		case err == nil && (status == http.StatusNotFound || status == http.StatusGone):
			if rerr := s.cfg.Book.Remove(sub.Endpoint); rerr != nil && !errors.Is(rerr, ErrNotFound) {
				return rerr
			}
			return errGone
		case err == nil && status != http.StatusTooManyRequests && status < 500:
			return fmt.Errorf("the push service refused the push: HTTP %d", status)
		}
		if err == nil {
			err = fmt.Errorf("HTTP %d", status)
		}
		if attempt >= s.cfg.Attempts {
			return fmt.Errorf("gave up after %d tries: %w", attempt, err)
		}
		d := min(wait, time.Minute)
		if retryAfter > 0 {
			d = min(retryAfter, time.Minute)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		wait *= 2
	}
}

func encryptFor(plain []byte, keys decoded) ([]byte, error) {
	as, err := ecdh.P256().GenerateKey(rand.Reader) // single use, per message (RFC 8291 §2)
	if err != nil {
		return nil, err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return Encrypt(plain, keys.public, keys.auth, as, salt)
}

// post makes one try: the push service's status and the Retry-After it
// asked for (0 when none).
func (s *Sender) post(ctx context.Context, endpoint string, body []byte, topic, urgency string, ttl time.Duration) (int, time.Duration, error) {
	auth, err := s.cfg.Keys.Authorization(endpoint, s.cfg.Subject, time.Now().Add(12*time.Hour))
	if err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Encoding", "aes128gcm")
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("TTL", strconv.Itoa(int(ttl.Seconds())))
	req.Header.Set("Topic", topic)
	req.Header.Set("Urgency", urgency)
	req.Header.Set("Authorization", auth)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	var after time.Duration
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		after = time.Duration(secs) * time.Second
	}
	return resp.StatusCode, after, nil
}
