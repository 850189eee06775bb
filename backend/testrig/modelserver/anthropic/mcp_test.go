package anthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// mcpServer is a minimal MCP server over the Streamable HTTP transport
// (JSON-RPC POSTed to /mcp, answered as application/json), written for
// the tests: it offers the tools in tools and answers tools/call with call.
type mcpServer struct {
	*httptest.Server
	t     *testing.T
	tools []mcpTool
	call  func(name string, args json.RawMessage) mcpResult

	// progress, when non-zero, makes tools/call answer as an SSE stream
	// that sends a notifications/progress this often until the result.
	progress time.Duration

	mu    sync.Mutex
	log   []mcpMessage // every JSON-RPC message received, in order
	calls []mcpCall
}

type mcpTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

type mcpResult struct {
	Text    string
	IsError bool
}

type mcpMessage struct {
	Method  string
	Body    json.RawMessage
	Headers http.Header
}

type mcpCall struct {
	Name string
	Args json.RawMessage
}

func newMCPServer(t *testing.T, tools []mcpTool, call func(string, json.RawMessage) mcpResult) *mcpServer {
	m := &mcpServer{t: t, tools: tools, call: call}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

// config writes an --mcp-config file naming this server as `name`.
func (m *mcpServer) config(t *testing.T, name string, extra ...map[string]any) string {
	server := map[string]any{"type": "http", "url": m.URL + "/mcp"}
	for _, e := range extra {
		for k, v := range e {
			server[k] = v
		}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: server}})
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (m *mcpServer) calls_() []mcpCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mcpCall(nil), m.calls...)
}

func (m *mcpServer) messages() []mcpMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mcpMessage(nil), m.log...)
}

func (m *mcpServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// No server-initiated stream, no session to delete.
		m.t.Logf("mcp: %s %s -> 405", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.log = append(m.log, mcpMessage{Method: msg.Method, Body: body, Headers: r.Header.Clone()})
	m.mu.Unlock()
	m.t.Logf("mcp: %s %s", msg.Method, body)
	if len(msg.ID) == 0 || string(msg.ID) == "null" {
		// a notification (notifications/initialized, cancelled, ...)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result any
	switch msg.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(msg.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-06-18"
		}
		w.Header().Set("Mcp-Session-Id", "conch-test-session")
		result = map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
			"serverInfo":      map[string]any{"name": "conch", "version": "0.0.1"},
		}
	case "ping":
		result = map[string]any{}
	case "tools/list":
		result = map[string]any{"tools": m.tools}
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		json.Unmarshal(msg.Params, &p)
		m.mu.Lock()
		m.calls = append(m.calls, mcpCall{Name: p.Name, Args: p.Arguments})
		m.mu.Unlock()
		answer := func() any {
			res := m.call(p.Name, p.Arguments)
			return map[string]any{
				"content": []any{map[string]any{"type": "text", "text": res.Text}},
				"isError": res.IsError,
			}
		}
		if m.progress > 0 {
			m.stream(w, msg.ID, p.Meta.ProgressToken, answer)
			return
		}
		result = answer()
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
			"error": map[string]any{"code": -32601, "message": "method not found: " + msg.Method}})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
}

// stream answers one request as an SSE stream: progress notifications
// until answer returns, then the response.
func (m *mcpServer) stream(w http.ResponseWriter, id, token json.RawMessage, answer func() any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	done := make(chan any, 1)
	go func() { done <- answer() }()
	tick := time.NewTicker(m.progress)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case res := <-done:
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": res})
			return
		case <-tick.C:
			if len(token) > 0 {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": token, "progress": n, "message": "waiting for the user"}})
			}
		}
	}
}
