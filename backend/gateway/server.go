package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Limits is how the server keeps a local process from starving it:
// timeouts for each part of a request, and a cap on open connections. The
// zero value of a field takes its default.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 10 s).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included (30 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response (2 min; event streams have
	// their own per-write timeout).
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends nothing (60 s).
	IdleTimeout time.Duration
	// MaxConns caps open connections (512). At the cap a new connection
	// closes the one that has waited longest without a request being
	// served on it (idle, or still sending its request); when every one is
	// being served, the new one is closed.
	MaxConns int
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.ReadTimeout, 30*time.Second)
	def(&l.WriteTimeout, 2*time.Minute)
	def(&l.IdleTimeout, time.Minute)
	if l.MaxConns <= 0 {
		l.MaxConns = 512
	}
	return l
}

// Server is the gateway's HTTP server with its limits in force.
type Server struct {
	*http.Server
	guard *connGuard
}

// NewServer serves h within lim.
func NewServer(h http.Handler, log *slog.Logger, lim Limits) *Server {
	lim = lim.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &connGuard{max: lim.MaxConns, conns: map[net.Conn]*connState{}}
	serving := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			g.serving(c, true)
			defer g.serving(c, false)
		}
		h.ServeHTTP(w, r)
	})
	return &Server{
		Server: &http.Server{
			Handler:           serving,
			ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
			ReadHeaderTimeout: lim.ReadHeaderTimeout,
			ReadTimeout:       lim.ReadTimeout,
			WriteTimeout:      lim.WriteTimeout,
			IdleTimeout:       lim.IdleTimeout,
			MaxHeaderBytes:    64 << 10,
			ConnState:         g.track,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		guard: g,
	}
}

// Serve accepts connections on ln until Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	return s.Server.Serve(&guardedListener{Listener: ln, guard: s.guard})
}

// Open is how many connections the server holds now (tests).
func (s *Server) Open() int {
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	return len(s.guard.conns)
}

// connGuard keeps the count of open connections and what each is doing.
type connGuard struct {
	max   int
	mu    sync.Mutex
	conns map[net.Conn]*connState
}

// connKey finds a request's connection in its context.
type connKey struct{}

type connState struct {
	state http.ConnState
	// busy is set while a handler serves a request on it: only then is
	// the connection doing work for someone who got through the headers.
	busy  bool
	since time.Time
}

// serving marks c as serving a request (or done with it).
func (g *connGuard) serving(c net.Conn, busy bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cs, ok := g.conns[c]; ok {
		cs.busy, cs.since = busy, time.Now()
	}
}

// track follows the server's view of each connection. A hijacked one (an
// event stream) leaves the count: the gateway caps those itself.
func (g *connGuard) track(c net.Conn, st http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch st {
	case http.StateHijacked, http.StateClosed:
		delete(g.conns, c)
	case http.StateIdle:
		if cs, ok := g.conns[c]; ok {
			cs.state, cs.busy, cs.since = st, false, time.Now()
		}
	default:
		if cs, ok := g.conns[c]; ok && cs.state != st {
			cs.state = st
		}
	}
}

// admit makes room for c: at the cap it closes the connection that has
// waited longest without a request being served on it (idle, silent, or
// sending its headers slowly), or refuses c when every one is serving.
func (g *connGuard) admit(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.conns) >= g.max {
		var victim net.Conn
		var at time.Time
		for other, cs := range g.conns {
			if !cs.busy && (victim == nil || cs.since.Before(at)) {
				victim, at = other, cs.since
			}
		}
		if victim == nil {
			return false
		}
		delete(g.conns, victim)
		_ = victim.Close()
	}
	g.conns[c] = &connState{state: http.StateNew, since: time.Now()}
	return true
}

type guardedListener struct {
	net.Listener
	guard *connGuard
}

func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.guard.admit(c) {
			return c, nil
		}
		_ = c.Close()
	}
}

// ErrRemote is returned by Listen for an address beyond this machine
// without allowRemote.
var ErrRemote = errors.New("not a loopback address")

// Listen opens addr for the gateway. Only loopback addresses are taken
// unless allowRemote; an address that is empty or unspecified (":7420",
// "0.0.0.0:7420", "[::]:7420") listens on every interface and so is remote
// too. hosts are the names and addresses beyond loopback the server then
// answers as, for the Host and Origin checks.
func Listen(addr string, allowRemote bool) (ln net.Listener, hosts []string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %q: %w (write it as host:port, e.g. 127.0.0.1:7420)", addr, err)
	}
	if !loopback(host) {
		if !allowRemote {
			what := host
			if unspecified(host) {
				what = "every network interface"
			}
			return nil, nil, fmt.Errorf("%s would listen on %s, so anyone who can reach this machine could reach Conch; use 127.0.0.1:%s, or add --allow-remote to serve beyond this machine (over plain HTTP): %w", addr, what, port, ErrRemote)
		}
		hosts = remoteHosts(host)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, hosts, nil
}

func unspecified(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// remoteHosts is what a server on host answers as beyond loopback: host
// itself, or for every interface each interface's address and this
// machine's name.
func remoteHosts(host string) []string {
	if !unspecified(host) {
		return []string{host}
	}
	var out []string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				out = append(out, n.IP.String())
			}
		}
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
