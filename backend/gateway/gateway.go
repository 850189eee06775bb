// Package gateway serves the frontend and the HTTP API on loopback, behind
// Host, Origin and sign-in token checks on every request, WebSocket included.
package gateway

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"

	"conch/backend/client"
	"conch/backend/errcode"
	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/service"
)

// TokenFile is the sign-in token's file name inside the home folder (the
// client reads it there).
const TokenFile = client.TokenFile

// Config wires a gateway.
type Config struct {
	// API is every operation the gateway serves (*service.Service).
	API    service.API
	Bus    *event.Bus
	Assets fs.FS // the built frontend; nil serves a short notice
	Token  string
	Log    *slog.Logger
	// Logs are the tasks' output logs, followed as they grow for
	// GET /api/tasks/:id/output?follow=1 (nil: not served).
	Logs *output.Logs

	// Hosts are more host names (or IPs) the server answers as, besides
	// the loopback names: the addresses --allow-remote serves on.
	Hosts []string
}

// Gateway is the HTTP handler for one listening port.
type Gateway struct {
	cfg     Config
	api     service.API
	port    string
	hosts   map[string]bool
	mux     *http.ServeMux
	tickets *tickets
	// streams counts live WebSocket streams, which hold a connection each
	// outside the server's own accounting.
	streams atomic.Int32
}

// New returns the handler for a server listening on addr (host:port as
// bound, so a port of 0 must already be resolved).
func New(cfg Config, addr string) (*Gateway, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("gateway address %q: %w", addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 {
		return nil, fmt.Errorf("gateway address %q: needs the bound port", addr)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{
		cfg:  cfg,
		api:  cfg.API,
		port: port,
		hosts: map[string]bool{
			"127.0.0.1:" + port: true,
			"localhost:" + port: true,
			"[::1]:" + port:     true,
		},
		mux:     http.NewServeMux(),
		tickets: newTickets(),
	}
	for _, h := range cfg.Hosts {
		g.hosts[strings.ToLower(net.JoinHostPort(strings.Trim(h, "[]"), port))] = true
	}
	g.routes()
	return g, nil
}

// SocketHost is the one Host a gateway on a Unix socket answers as (a
// runner's, reached through an SSH-forwarded socket): no port, no other
// name, and no browser origin but its own.
const SocketHost = "localhost"

// NewSocket returns the handler for a server on a Unix socket (a host's
// runner). Only the socket's own user can connect (its folder is 0700,
// the socket 0600), and every API request still needs the token.
func NewSocket(cfg Config) *Gateway {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{cfg: cfg, api: cfg.API, hosts: map[string]bool{SocketHost: true},
		mux: http.NewServeMux(), tickets: newTickets()}
	g.routes()
	return g
}

// ServeHTTP checks Host, Origin and the token, then routes. The page and
// its assets need no token (they hold none: the page keeps the one from its
// sign-in link); every API route needs it as a Bearer header, and the event
// stream a one-time ticket bought with it. No cookie carries it, so nothing
// rides along on a request another page makes.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v) // a handler cut its answer off on purpose (a backup that broke off)
			}
			g.cfg.Log.Error("gateway panic", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			writeError(w, errcode.Internal, "Something went wrong inside Conch.")
		}
	}()
	h := w.Header()
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	if !g.hosts[strings.ToLower(r.Host)] {
		writeError(w, errcode.BadHost, "This address is not served here; use 127.0.0.1 or localhost.")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originOK(origin) {
		writeError(w, errcode.BadOrigin, "Requests from this origin are not allowed.")
		return
	}
	if !cleanPath(r.URL) {
		writeError(w, errcode.BadPath, "This path holds . or .. or an empty part; ask for the path itself.")
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		if r.URL.Query().Has("token") {
			oldLink(w)
			return
		}
		g.mux.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/api/events" && r.URL.Query().Has("ticket") {
		if !g.tickets.use(r.URL.Query().Get("ticket")) {
			writeError(w, errcode.Unauthorized, "This event ticket is not valid (each works once, for 30 seconds); ask for a new one.")
			return
		}
		g.mux.ServeHTTP(w, r)
		return
	}
	if !g.authorized(r) {
		writeError(w, errcode.Unauthorized, "Sign in with the link that `conch serve` printed, or send the token as a Bearer header.")
		return
	}
	g.mux.ServeHTTP(w, r)
}

// cleanPath reports whether u's path is its own clean form: no "." or ".."
// part and no empty one (a trailing slash aside). The router would redirect
// such a path elsewhere; a client gets a plain refusal instead.
func cleanPath(u *url.URL) bool {
	for _, p := range []string{u.Path, u.RawPath} {
		if p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") {
			return false
		}
		parts := strings.Split(strings.TrimSuffix(p[1:], "/"), "/")
		for i, part := range parts {
			if part == "." || part == ".." || (part == "" && !(i == 0 && len(parts) == 1)) {
				return false
			}
		}
	}
	return true
}

func (g *Gateway) originOK(origin string) bool {
	host, ok := strings.CutPrefix(strings.ToLower(origin), "http://")
	return ok && g.hosts[host]
}

func (g *Gateway) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && g.tokenOK(tok)
}

func (g *Gateway) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(g.cfg.Token)) == 1
}

// oldLink answers a sign-in link of the old form (?token=), which put the
// token where logs and Referer headers see it.
func oldLink(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprint(w, `<!doctype html><meta charset="utf-8"><title>Conch</title>
<style>body{font:15px system-ui,sans-serif;display:grid;place-items:center;height:100vh;margin:0;color:#222;background:#fafafa}
@media (prefers-color-scheme:dark){body{color:#ddd;background:#161618}}code{font-size:13px}</style>
<main><h1>Conch</h1><p>This sign-in link is of an old form. Open the link that <code>conch serve</code> prints now: it carries the token after <code>#</code>.</p></main>`)
}

// LoadToken reads the sign-in token from home, creating it (0600) at first
// start.
func LoadToken(home string) (string, error) {
	path := filepath.Join(home, TokenFile)
	b, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimSpace(string(b))
		if len(tok) >= 32 {
			return tok, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read sign-in token: %w", err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("make sign-in token: %w", err)
	}
	tok := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write sign-in token: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", fmt.Errorf("protect sign-in token: %w", err)
	}
	return tok, nil
}
