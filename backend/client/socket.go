package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"conch/backend/task"
)

// socketBase is the URL a runner's gateway is asked at over its socket:
// the one Host it answers as (gateway.SocketHost).
const socketBase = "http://localhost"

// DialSocket is a client of the runner serving on the Unix socket at
// path, with the token from its home (gateway-token). It sends nothing:
// a runner that is not there is found out by the first request.
func DialSocket(path, token string) *Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &Client{
		Base: socketBase, home: path, token: strings.TrimSpace(token),
		http: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "unix", path)
			},
			ResponseHeaderTimeout: 30 * time.Second,
		}},
	}
}

// The event types a follower reads; the same strings as event.Type's
// (a test keeps them equal).
const (
	EventTaskChanged = "task.changed"
	EventTaskDeleted = "task.deleted"
	EventReload      = "reload"
)

// Event is one change from Conch's event stream, as much of it as a
// follower of tasks reads: the task after a change, or a deleted task's id.
type Event struct {
	Type string     `json:"type"`
	Task *task.Task `json:"task,omitempty"`
	ID   string     `json:"id,omitempty"`
}

// maxEvent bounds one event read from the stream (a task's text alone
// may be 64 KiB).
const maxEvent = 8 << 20

// Stream is an open event stream. Close it when done.
type Stream struct {
	c *websocket.Conn
}

// Events opens the event stream (GET /api/events as a WebSocket, with the
// token). Every change committed after it returns is on it, in order.
func (c *Client) Events(ctx context.Context) (*Stream, error) {
	url := "ws" + strings.TrimPrefix(c.Base, "http") + "/api/events"
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient: c.http,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}},
	})
	if err != nil {
		if resp != nil && resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, &Error{Status: resp.StatusCode}
		}
		return nil, fmt.Errorf("%w on %s (the event stream: %v)", ErrNotRunning, c.home, err)
	}
	ws.SetReadLimit(maxEvent)
	return &Stream{c: ws}, nil
}

// Next waits for the next event. An error ends the stream: Conch went
// away, or dropped this client for falling behind (then catch up again).
func (s *Stream) Next(ctx context.Context) (Event, error) {
	var ev Event
	_, b, err := s.c.Read(ctx)
	if err != nil {
		return ev, fmt.Errorf("read the event stream: %w", err)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("read the event stream: %w", err)
	}
	return ev, nil
}

// Close ends the stream.
func (s *Stream) Close() error { return s.c.CloseNow() }
