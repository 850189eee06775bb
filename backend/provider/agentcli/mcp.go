package agentcli

import (
	"bytes"
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
	"strconv"
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

// mcpVersion is the protocol version answered when the client asks for
// one this server does not know.
const mcpVersion = "2025-06-18"

// mcpVersions are the protocol versions this server can speak: it uses
// nothing that differs between them.
var mcpVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

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

// declined is what Claude is told when the person says no.
const declined = "The person declined."

// JSON-RPC error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcNoMethod       = -32601
	rpcInvalidParams  = -32602
	rpcCancelled      = -32800 // the client cancelled the request
)

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
// config file is removed. Safe more than once and from several goroutines.
func (s *askServer) Close() {
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

// rpcMessage is one JSON-RPC 2.0 message from the client: a request (id
// and method), a notification (method, no id) or a response.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// decodeRPC reads one JSON-RPC message. A message that cannot be served
// gives an error to send back, with the HTTP status for it; its id is
// the message's when it could be read, else null.
func decodeRPC(body []byte) (rpcMessage, *rpcReply) {
	var m rpcMessage
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return m, errReply(nil, rpcInvalidRequest, "batches are not supported")
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, errReply(nil, rpcParseError, "parse error")
	}
	if len(m.ID) > 0 && !validID(m.ID) {
		return m, errReply(nil, rpcInvalidRequest, "id must be a string or a number")
	}
	if m.JSONRPC != "2.0" {
		return m, errReply(m.ID, rpcInvalidRequest, `jsonrpc must be "2.0"`)
	}
	if m.Method == "" && (len(m.ID) == 0 || len(m.Result) == 0 && len(m.Error) == 0) {
		return m, errReply(m.ID, rpcInvalidRequest, "no method")
	}
	return m, nil
}

// validID reports whether raw is a JSON string or number (MCP forbids a
// null id).
func validID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

func errReply(id json.RawMessage, code int, msg string) *rpcReply {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return &rpcReply{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg}}
}

// handle serves one message and returns the HTTP status and the reply
// (nil for a notification or a response, which get 202 and no body).
func (s *askServer) handle(ctx context.Context, body []byte) (int, *rpcReply) {
	m, bad := decodeRPC(body)
	if bad != nil {
		return http.StatusBadRequest, bad
	}
	if len(m.ID) == 0 || m.Method == "" {
		if m.Method == "notifications/cancelled" {
			s.cancelCall(m.Params)
		}
		return http.StatusAccepted, nil
	}
	result, rerr := s.call(ctx, m)
	if rerr != nil {
		return http.StatusOK, &rpcReply{JSONRPC: "2.0", ID: m.ID, Error: rerr}
	}
	return http.StatusOK, &rpcReply{JSONRPC: "2.0", ID: m.ID, Result: result}
}

// approveSchema is the approve tool's input, as Claude Code sends it.
var approveSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"tool_name":   map[string]any{"type": "string"},
		"input":       map[string]any{"type": "object"},
		"tool_use_id": map[string]any{"type": "string"},
	},
	"required": []string{"tool_name", "input"},
}

func (s *askServer) call(ctx context.Context, m rpcMessage) (any, *rpcError) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		version := mcpVersion
		if mcpVersions[p.ProtocolVersion] {
			version = p.ProtocolVersion
		}
		return map[string]any{
			"protocolVersion": version,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "conch", "version": "1"},
		}, nil
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		var tools []any
		if s.ask != nil {
			tools = append(tools, map[string]any{
				"name":        "approve",
				"description": "Asks the person in Conch whether Claude may use a tool.",
				"inputSchema": approveSchema,
			})
		}
		for _, t := range s.tools {
			schema := t.Schema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "inputSchema": schema})
		}
		if tools == nil {
			tools = []any{}
		}
		return map[string]any{"tools": tools}, nil
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Name == "approve" && s.ask != nil {
			return s.approve(ctx, m)
		}
		return s.callTool(ctx, m)
	}
	return nil, &rpcError{Code: rpcNoMethod, Message: "method not found: " + m.Method}
}

// approve puts Claude's question to the person and says what they chose,
// in the shape --permission-prompt-tool wants: text holding
// {"behavior":"allow","updatedInput":…} or {"behavior":"deny","message":…}.
func (s *askServer) approve(ctx context.Context, m rpcMessage) (any, *rpcError) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			ToolName  string          `json:"tool_name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
		} `json:"arguments"`
		Meta struct {
			ToolUseID string `json:"claudecode/toolUseId"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "tools/call takes name and arguments"}
	}
	useID := orDefault(p.Arguments.ToolUseID, p.Meta.ToolUseID)
	if p.Name != "approve" {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "unknown tool: " + p.Name}
	}
	input := bytes.TrimSpace(p.Arguments.Input)
	if len(input) == 0 || string(input) == "null" {
		input = []byte("{}")
	}
	if p.Arguments.ToolName == "" || input[0] != '{' {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "approve takes tool_name and an input object"}
	}
	// The ask ends when the client goes or cancels this call, or when the
	// server closes (ctx comes from s.ctx).
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.track(m.ID, cancel)()

	allowed, err := s.ask(actx, claudeAction(p.Arguments.ToolName, input, s.cwd))
	var answer any
	if actx.Err() == nil && (err != nil || !allowed) {
		s.refuse(useID)
	}
	switch {
	case actx.Err() != nil:
		return nil, &rpcError{Code: rpcCancelled, Message: "request cancelled"}
	case err != nil:
		answer = map[string]any{"behavior": "deny", "message": "Conch could not ask the person: " + err.Error()}
	case allowed:
		answer = struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
		}{"allow", input}
	default:
		answer = map[string]any{"behavior": "deny", "message": declined}
	}
	text, merr := json.Marshal(answer)
	if merr != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "bad input: " + merr.Error()}
	}
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}}, nil
}

// refuse records that the tool use id was answered deny.
func (s *askServer) refuse(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	s.refused[id] = true
	s.mu.Unlock()
}

// wasRefused reports whether this server answered deny to the tool use
// id; the answer reaches the CLI before the tool's result comes out of it.
func (s *askServer) wasRefused(id string) bool {
	if s == nil || id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[id]
}

// callTool runs one of Conch's tools for the CLI: the result is its text,
// isError when it failed (a refusal, a declined question, bad arguments),
// which the model reads as it would any tool's error.
func (s *askServer) callTool(ctx context.Context, m rpcMessage) (any, *rpcError) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "tools/call takes name and arguments"}
	}
	known := false
	for _, t := range s.tools {
		known = known || t.Name == p.Name
	}
	if !known || s.run == nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: "unknown tool: " + p.Name}
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.track(m.ID, cancel)()
	out, failed := s.run(cctx, p.Name, args)
	if cctx.Err() != nil {
		return nil, &rpcError{Code: rpcCancelled, Message: "request cancelled"}
	}
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": out}}, "isError": failed}, nil
}

// track registers a call in flight so notifications/cancelled can end it;
// the returned func forgets it.
func (s *askServer) track(id json.RawMessage, cancel context.CancelFunc) func() {
	key := idKey(id)
	call := &pendingCall{cancel}
	s.mu.Lock()
	s.calls[key] = call
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		// A client that reused the id has replaced it; leave that one.
		if s.calls[key] == call {
			delete(s.calls, key)
		}
		s.mu.Unlock()
	}
}

// pendingCall is a call waiting: for the person, or for a tool to end.
type pendingCall struct {
	cancel context.CancelFunc
}

// cancelCall ends the ask of the call a notifications/cancelled names.
func (s *askServer) cancelCall(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if call := s.calls[idKey(p.RequestID)]; call != nil {
		call.cancel()
	}
}

// idKey makes a JSON-RPC id comparable however the client wrote it
// ("a\u0062" and "ab", 1 and 1.0).
func idKey(raw json.RawMessage) string {
	var v any
	_ = json.Unmarshal(raw, &v)
	switch v := v.(type) {
	case string:
		return "s:" + v
	case float64:
		return "n:" + strconv.FormatFloat(v, 'g', -1, 64)
	}
	return "?" + string(raw)
}
