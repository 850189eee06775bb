// Package gateway serves the frontend and the HTTP API on loopback, behind
// Host, Origin and sign-in token checks on every request, WebSocket included.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"conch/backend/chat"
	"conch/backend/doctor"
	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// CookieName is the session cookie set by visiting /?token=.
const CookieName = "conch_session"

// TokenFile is the sign-in token's file name inside the home folder.
const TokenFile = "gateway-token"

// Config wires a gateway.
type Config struct {
	Tasks *taskrun.Runner
	Chats *chat.Manager // nil: the conversation routes answer 404
	// Handoff starts a chat's background task (POST /api/tasks with a
	// conversationId); nil: such tasks run on the shell as before.
	Handoff Handoff
	Prefs   Preferences
	Doctor  func() doctor.Report
	Logs    *output.Logs
	Bus     *event.Bus
	Assets  fs.FS // the built frontend; nil serves a short notice
	Token   string
	Log     *slog.Logger

	// Providers is the provider registry; nil: the provider routes answer
	// 404.
	Providers Providers
}

// Preferences reads and saves the person's preferences (and applies them).
// Handoff starts background tasks from chats.
type Handoff interface {
	Background(ctx context.Context, req taskrun.CreateRequest) (task.Task, error)
	// RemoveWorktree removes a finished helper's kept worktree; one that
	// holds work only with confirm.
	RemoveWorktree(ctx context.Context, id string, confirm bool) (task.Task, error)
}

// Preferences reads and changes the person's preferences.
type Preferences interface {
	Preferences() (pref.Preferences, error)
	SetPreferences(p pref.Preferences) (pref.Preferences, error)
}

// Gateway is the HTTP handler for one listening port.
type Gateway struct {
	cfg   Config
	port  string
	hosts map[string]bool
	mux   *http.ServeMux
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
		port: port,
		hosts: map[string]bool{
			"127.0.0.1:" + port: true,
			"localhost:" + port: true,
			"[::1]:" + port:     true,
		},
		mux: http.NewServeMux(),
	}
	g.routes()
	return g, nil
}

// ServeHTTP checks Host, Origin and the token, then routes.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			g.cfg.Log.Error("gateway panic", "path", r.URL.Path, "panic", v)
			writeError(w, http.StatusInternalServerError, "internal", "Something went wrong inside Conch.")
		}
	}()
	if !g.hosts[strings.ToLower(r.Host)] {
		writeError(w, http.StatusForbidden, "bad_host", "This address is not served here; use 127.0.0.1 or localhost.")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originOK(origin) {
		writeError(w, http.StatusForbidden, "bad_origin", "Requests from this origin are not allowed.")
		return
	}
	if tok := r.URL.Query().Get("token"); tok != "" && r.URL.Path == "/" {
		g.signIn(w, r, tok)
		return
	}
	if !g.authorized(r) {
		if !strings.HasPrefix(r.URL.Path, "/api/") && r.Method == http.MethodGet {
			signInPage(w)
			return
		}
		writeError(w, http.StatusUnauthorized, "unauthorized", "Sign in with the link that `conch serve` printed, or send the token as a Bearer header.")
		return
	}
	g.mux.ServeHTTP(w, r)
}

func (g *Gateway) originOK(origin string) bool {
	host, ok := strings.CutPrefix(strings.ToLower(origin), "http://")
	return ok && g.hosts[host]
}

func (g *Gateway) authorized(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		return ok && g.tokenOK(tok)
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return g.tokenOK(c.Value)
	}
	return false
}

func (g *Gateway) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(g.cfg.Token)) == 1
}

// signIn turns a valid ?token= into a session cookie and a clean URL.
func (g *Gateway) signIn(w http.ResponseWriter, r *http.Request, tok string) {
	if !g.tokenOK(tok) {
		writeError(w, http.StatusUnauthorized, "unauthorized", "This sign-in link is not valid; use the one `conch serve` printed last.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    g.cfg.Token,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func signInPage(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprint(w, `<!doctype html><meta charset="utf-8"><title>Conch</title>
<style>body{font:15px system-ui,sans-serif;display:grid;place-items:center;height:100vh;margin:0;color:#222;background:#fafafa}
@media (prefers-color-scheme:dark){body{color:#ddd;background:#161618}}code{font-size:13px}</style>
<main><h1>Conch</h1><p>Open the link that <code>conch serve</code> printed: it carries the sign-in token.</p></main>`)
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
