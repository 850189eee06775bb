package agentcli

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"conch/backend/provider"
)

// Conch serves each CLI run an MCP server of its own on loopback
// (Streamable HTTP transport, JSON responses only, no sessions). It offers
// Conch's tools for the run (Request.Tools: the hand-off tools
// start_background_task and delegate, or a task's report_result), run
// through Request.Call with the same checks as for any chat; and, for
// Claude Code, whose permission questions go to an MCP tool named by
// --permission-prompt-tool, the tool approve, which puts the question to
// Request.Ask. The URL carries a random token, so only a process that was
// given it can reach the server.

// askToolName is the prompt tool as Claude Code names it: mcp__<server>__<tool>.
const askToolName = "mcp__conch__approve"

// mcpBeat is how long a response may wait before its headers are sent
// and kept alive, and then how often it is (see askServer.wait). Claude
// Code gives up on a tool that sends nothing for 60 s.
const mcpBeat = 10 * time.Second

// mcpTimeout is the per-server tool timeout written in the config, in
// milliseconds: a person may take a day to answer.
const mcpTimeout = 24 * 60 * 60 * 1000

// mcpMaxBody bounds one request; an approve call carries the tool's
// input, which for Write holds a whole file.
const mcpMaxBody = 16 << 20

// askFunc is Request.Ask.
type askFunc func(ctx context.Context, a provider.Action) (bool, error)

// callFunc is Request.Call.
type callFunc func(ctx context.Context, name string, args json.RawMessage) (string, bool)

// serveOpts say what a run's MCP server offers.
type serveOpts struct {
	// Ask, when set, adds the approve tool for Claude Code's permission
	// questions.
	Ask askFunc
	// Tools are Conch's tools for the run, run by Call.
	Tools []provider.ToolSpec
	Call  callFunc
	// Cwd is the run's folder, for the questions' wording.
	Cwd string
	// Beat is mcpBeat but in tests.
	Beat time.Duration
}

// askServer is the MCP server for one CLI run. It lives from
// startAskServer to Close; Close is also called when the run's context
// ends.
type askServer struct {
	ask   askFunc
	tools []provider.ToolSpec
	run   callFunc
	cwd   string
	beat  time.Duration // see wait

	path   string // /mcp/<token>
	addr   string // 127.0.0.1:port
	url    string
	config string // the --mcp-config file

	srv    *http.Server
	served chan struct{} // closed when Serve has returned
	conns  sync.WaitGroup

	ctx       context.Context // ends when the server closes
	cancel    context.CancelFunc
	stopWatch func() bool // stops closing on the run's ctx

	mu    sync.Mutex
	calls map[string]*pendingCall // approve calls in flight, by idKey
	// refused are the tool uses (by tool_use_id) this server answered
	// deny: Claude Code 2.1.197 (before tool_result_meta) marks a refused tool's result
	// only as an error, like one that ran and failed.
	refused map[string]bool

	closeOnce sync.Once
}

// startAskServer starts the server for one run and writes its config
// file. ctx is the run's: when it ends, the server closes.
func startAskServer(ctx context.Context, o serveOpts) (*askServer, error) {
	if o.Beat <= 0 {
		o.Beat = mcpBeat
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	s := &askServer{
		ask:     o.Ask,
		tools:   o.Tools,
		run:     o.Call,
		cwd:     o.Cwd,
		beat:    o.Beat,
		path:    "/mcp/" + hex.EncodeToString(token),
		addr:    ln.Addr().String(),
		served:  make(chan struct{}),
		calls:   map[string]*pendingCall{},
		refused: map[string]bool{},
	}
	s.url = "http://" + s.addr + s.path
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		// Counted so that Close returns only once every connection's
		// goroutine has finished.
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				s.conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				s.conns.Done()
			}
		},
	}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	if err := s.writeConfig(); err != nil {
		s.Close()
		return nil, err
	}
	// Under mu: Close, run by AfterFunc at once if ctx has ended, reads it.
	s.mu.Lock()
	s.stopWatch = context.AfterFunc(ctx, s.Close)
	s.mu.Unlock()
	return s, nil
}

// toolServer starts the server offering Conch's tools (Request.Tools, run
// by Request.Call) to a run of req; nil when it has none to offer.
func toolServer(ctx context.Context, req provider.Request) (*askServer, error) {
	if len(req.Tools) == 0 || req.Call == nil {
		return nil, nil
	}
	return startAskServer(ctx, serveOpts{Tools: req.Tools, Call: req.Call, Cwd: req.Cwd})
}

// writeConfig writes the --mcp-config file naming this server; only its
// owner may read it (os.CreateTemp makes it 0600), since it holds the token.
func (s *askServer) writeConfig() error {
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"conch": map[string]any{"type": "http", "url": s.url, "timeout": mcpTimeout},
	}})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "conch-claude-mcp-*.json")
	if err != nil {
		return fmt.Errorf("write the mcp config: %w", err)
	}
	s.config = f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the mcp config: %w", err)
	}
	return nil
}

// Close stops the server: pending asks are cancelled, connections closed,
// and it returns once every goroutine it started has ended and the
// config file is removed. Safe more than once and from several goroutines,
// and on a nil server (a run that was given none).
func (s *askServer) Close() {
	if s == nil {
		return
	}
	s.closeOnce.Do(func() {
		s.mu.Lock()
		stop := s.stopWatch
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
		s.cancel()
		_ = s.srv.Close()
		<-s.served
		s.conns.Wait()
		if s.config != "" {
			_ = os.Remove(s.config)
		}
	})
}

// ServeHTTP takes POSTs of single JSON-RPC messages at the token path
// and answers with JSON. GET (a server-sent event stream) is not offered,
// which the transport allows with 405.
func (s *askServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The Host and Origin checks keep a web page, through DNS rebinding,
	// from reaching the server.
	if !s.local(r.Host) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if r.URL.RawQuery != "" || subtle.ConstantTimeCompare([]byte(r.URL.Path), []byte(s.path)) != 1 {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcpMaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "bad request", http.StatusBadRequest)
		}
		return
	}
	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	status, reply, started := s.wait(w, r.Context(), body, stream)
	if reply == nil {
		if !started {
			w.WriteHeader(status)
		}
		return
	}
	b, err := json.Marshal(reply)
	if err != nil {
		// Only a tool input could fail to re-encode, and it came as JSON.
		status, b = http.StatusInternalServerError, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	switch {
	case started && stream:
		_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
		return
	case !started:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
	}
	_, _ = w.Write(b)
}

// wait handles the message while keeping the response alive. A person
// may take many minutes to answer, and an MCP client gives up on a call
// that sends nothing for a while (Claude Code after 60 s, Node's fetch on
// headers after five minutes). So once beat has passed without an
// answer, wait sends the headers (200: only a tools/call waits, and its
// errors are 200 too) and then, every beat, a progress notification on an
// SSE stream when the client takes one (stream) and gave a progressToken,
// else a space, which JSON allows before the reply; started says it did.
// Only this goroutine writes to w.
func (s *askServer) wait(w http.ResponseWriter, ctx context.Context, body []byte, stream bool) (status int, reply *rpcReply, started bool) {
	type answer struct {
		status int
		reply  *rpcReply
	}
	done := make(chan answer, 1)
	go func() {
		status, reply := s.handle(ctx, body)
		done <- answer{status, reply}
	}()
	var meta struct {
		Params struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &meta)
	token := meta.Params.Meta.ProgressToken
	tick := time.NewTicker(s.beat)
	defer tick.Stop()
	flusher, _ := w.(http.Flusher)
	for beats := 1; ; beats++ {
		select {
		case a := <-done:
			return a.status, a.reply, started
		case <-tick.C:
			if !started {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					w.Header().Set("Cache-Control", "no-cache")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(http.StatusOK)
				started = true
			}
			switch {
			case stream && len(token) > 0:
				note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": token, "progress": beats, "message": "Waiting for the person in Conch"}})
				_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", note)
			case stream:
				_, _ = w.Write([]byte(": waiting\n\n")) // an SSE comment
			default:
				_, _ = w.Write([]byte(" "))
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// local reports whether host names this server: its own address, or
// localhost at its port.
func (s *askServer) local(host string) bool {
	if host == s.addr {
		return true
	}
	_, port, _ := net.SplitHostPort(s.addr)
	return host == "localhost:"+port
}
