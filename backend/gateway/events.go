package gateway

import (
	"conch/backend/errcode"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// eventBuffer is how many events a client may fall behind before it is
// dropped; it then reconnects and reloads.
const eventBuffer = 256

// writeTimeout bounds one write to a client.
const writeTimeout = 5 * time.Second

// maxStreams bounds the live event streams: each holds a connection the
// server's own limits no longer see.
const maxStreams = 128

// fsModTime is the Last-Modified of embedded assets: the process start.
var fsModTime = time.Now()

// events streams every change to one WebSocket client until it leaves, falls
// behind, or the server shuts down.
func (g *Gateway) events(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	if n := g.streams.Add(1); n > maxStreams {
		g.streams.Add(-1)
		writeError(w, errcode.TooManyStreams, "Too many event streams are open; close a Conch tab and reload.")
		return
	}
	defer g.streams.Add(-1)
	// The server's read and write deadlines are for requests; a stream
	// lives as long as its client, and its writes have their own timeout.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	// Host and Origin were checked in ServeHTTP against the served origin,
	// which is stricter than the library's same-host check.
	// Subscribing before the handshake ends means no event published once
	// the client sees the stream open is lost to it.
	sub := g.cfg.Bus.Subscribe(eventBuffer)
	defer sub.Close()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the request
	}
	defer c.CloseNow()
	// ctx ends when the client leaves or is dropped by the bus, so a write
	// stuck on a client that does not read ends at once.
	ctx, cancel := context.WithCancel(c.CloseRead(r.Context()))
	defer cancel()
	go func() {
		select {
		case <-sub.Done():
		case <-ctx.Done():
		}
		cancel()
	}()
	for {
		select {
		case <-ctx.Done():
			select {
			case <-sub.Done():
				c.Close(websocket.StatusTryAgainLater, "fell behind; reconnect and reload")
			default:
			}
			return
		case ev := <-sub.C():
			b, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			wctx, cancelWrite := context.WithTimeout(ctx, writeTimeout)
			err = c.Write(wctx, websocket.MessageText, b)
			cancelWrite()
			if err != nil {
				return
			}
		}
	}
}
