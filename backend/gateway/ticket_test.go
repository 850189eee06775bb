package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func (e *env) ticket(t *testing.T) string {
	t.Helper()
	resp, b := e.do(t, req{method: "POST", path: "/api/events/ticket"})
	if resp.StatusCode != 200 {
		t.Fatalf("ticket: %d %s", resp.StatusCode, b)
	}
	var got struct {
		Ticket    string    `json:"ticket"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Ticket) < 32 || time.Until(got.ExpiresAt) > 31*time.Second {
		t.Fatalf("ticket %s: %v", b, err)
	}
	return got.Ticket
}

// A browser's WebSocket cannot send the token: it buys a ticket with it,
// which opens one stream, once.
func TestATicketOpensOneStreamOnce(t *testing.T) {
	e := setup(t)
	port := strings.TrimPrefix(e.base, "http://127.0.0.1:")
	origin := http.Header{"Origin": {"http://127.0.0.1:" + port}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tk := e.ticket(t)
	conn, _, err := websocket.Dial(ctx, wsURL(e)+"?ticket="+tk, &websocket.DialOptions{HTTPHeader: origin})
	if err != nil {
		t.Fatalf("dial with a fresh ticket: %v", err)
	}
	conn.CloseNow()
	for name, url := range map[string]string{
		"the same ticket again": wsURL(e) + "?ticket=" + tk,
		"a made-up ticket":      wsURL(e) + "?ticket=" + strings.Repeat("a", 48),
		"an empty ticket":       wsURL(e) + "?ticket=",
	} {
		conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: origin})
		if err == nil {
			conn.CloseNow()
			t.Fatalf("%s: the stream opened", name)
		}
		if resp == nil || resp.StatusCode != 401 {
			t.Fatalf("%s: %v %v", name, resp, err)
		}
	}
	// A ticket is bought with the token, never without it.
	resp, b := e.do(t, req{method: "POST", path: "/api/events/ticket", noToken: true})
	wantError(t, resp, b, 401, "unauthorized")
	// Nor does a ticket open anything but the stream.
	resp, b = e.do(t, req{method: "GET", path: "/api/tasks?ticket=" + e.ticket(t), noToken: true})
	wantError(t, resp, b, 401, "unauthorized")
}
