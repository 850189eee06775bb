package gateway

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// ticketTTL is how long an event ticket may wait to be used.
const ticketTTL = 30 * time.Second

// maxTickets bounds the tickets waiting to be used; issuing more drops
// the oldest.
const maxTickets = 64

// tickets are one-time passes to the event stream. A browser cannot send
// an Authorization header with a WebSocket, and a token in its URL would
// be long-lived; a ticket is bought with the token, works once and soon
// expires.
type tickets struct {
	mu      sync.Mutex
	pending map[string]time.Time // ticket → expiry
	now     func() time.Time
}

func newTickets() *tickets {
	return &tickets{pending: map[string]time.Time{}, now: time.Now}
}

// issue makes a new ticket.
func (t *tickets) issue() (string, time.Time) {
	buf := make([]byte, 24)
	_, _ = rand.Read(buf) // crypto/rand never fails on the platforms Conch runs on
	tk := hex.EncodeToString(buf)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var oldest string
	for k, exp := range t.pending {
		if !now.Before(exp) {
			delete(t.pending, k)
		} else if oldest == "" || exp.Before(t.pending[oldest]) {
			oldest = k
		}
	}
	if len(t.pending) >= maxTickets {
		delete(t.pending, oldest)
	}
	exp := now.Add(ticketTTL)
	t.pending[tk] = exp
	return tk, exp
}

// use spends a ticket: true once for a ticket issued less than ticketTTL ago.
func (t *tickets) use(tk string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, exp := range t.pending {
		if subtle.ConstantTimeCompare([]byte(k), []byte(tk)) == 1 {
			delete(t.pending, k)
			return t.now().Before(exp)
		}
	}
	return false
}

// ticket answers POST /api/events/ticket with a one-time pass to the event
// stream: connect to /api/events?ticket=… within 30 seconds.
func (g *Gateway) ticket(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	if !emptyBody(w, r) {
		return
	}
	tk, exp := g.tickets.issue()
	writeJSON(w, http.StatusOK, map[string]any{"ticket": tk, "expiresAt": exp.UTC()})
}
