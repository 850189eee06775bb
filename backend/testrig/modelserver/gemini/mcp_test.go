package gemini

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
)

// A minimal MCP server for the tests, over the Streamable HTTP transport
// (JSON-RPC POSTed to /mcp, answered as application/json) or over stdio
// (the test binary itself, run with CONCH_GEMINI_MCP_STDIO=1). It offers
// one tool, "lookup", whose result is "looked up: <query>".

// mcpTools is what tools/list answers.
var mcpTools = []map[string]any{{
	"name":        "lookup",
	"description": "Looks a word up in Conch's test dictionary.",
	"inputSchema": map[string]any{
		"type":       "object",
		"properties": map[string]any{"query": map[string]any{"type": "string"}},
		"required":   []string{"query"},
	},
}}

// mcpAnswer answers one JSON-RPC request; ok is false for a notification.
func mcpAnswer(body []byte) (reply map[string]any, method string, ok bool) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32700, "message": err.Error()}}, "", true
	}
	if len(msg.ID) == 0 || string(msg.ID) == "null" {
		return nil, msg.Method, false
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
		result = map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
			"serverInfo":      map[string]any{"name": "conch-test", "version": "0.0.1"},
		}
	case "ping":
		result = map[string]any{}
	case "tools/list":
		result = map[string]any{"tools": mcpTools}
	case "prompts/list":
		result = map[string]any{"prompts": []any{}}
	case "resources/list":
		result = map[string]any{"resources": []any{}}
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Query string `json:"query"`
			} `json:"arguments"`
		}
		json.Unmarshal(msg.Params, &p)
		result = map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "looked up: " + p.Arguments.Query}},
			"isError": false,
		}
	default:
		return map[string]any{"jsonrpc": "2.0", "id": msg.ID,
			"error": map[string]any{"code": -32601, "message": "method not found: " + msg.Method}}, msg.Method, true
	}
	return map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result}, msg.Method, true
}

// mcpHTTP is the MCP server over Streamable HTTP.
type mcpHTTP struct {
	*httptest.Server
	t       *testing.T
	mu      sync.Mutex
	methods []string
	headers []http.Header
	bodies  []string
}

func newMCPHTTP(t *testing.T) *mcpHTTP {
	m := &mcpHTTP{t: t}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *mcpHTTP) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// no server-initiated stream, no session to delete
		m.t.Logf("mcp: %s %s -> 405", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	reply, method, ok := mcpAnswer(body)
	m.mu.Lock()
	m.methods = append(m.methods, method)
	m.headers = append(m.headers, r.Header.Clone())
	m.bodies = append(m.bodies, string(body))
	m.mu.Unlock()
	m.t.Logf("mcp: %s", body)
	if !ok {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if method == "initialize" {
		w.Header().Set("Mcp-Session-Id", "conch-test-session")
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(reply)
}

func (m *mcpHTTP) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.methods...)
}

// serveMCPStdio is the MCP server over stdio: newline-delimited JSON-RPC.
// It logs what it gets to $CONCH_GEMINI_MCP_LOG.
func serveMCPStdio() {
	var log io.Writer = io.Discard
	if p := os.Getenv("CONCH_GEMINI_MCP_LOG"); p != "" {
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			log = f
		}
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		fmt.Fprintf(log, "%s\n", sc.Bytes())
		if reply, _, ok := mcpAnswer(sc.Bytes()); ok {
			out.Encode(reply)
		}
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("CONCH_GEMINI_MCP_STDIO") == "1" {
		serveMCPStdio()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
