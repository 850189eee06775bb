package responses

// A minimal MCP server over streamable HTTP (JSON responses, no SSE),
// enough for Codex to list and call tools.

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
)

type mcpTool struct {
	Name        string
	Description string
	Annotations map[string]any
	// Result is the text the tool answers with.
	Result string
}

type mcpServer struct {
	*httptest.Server
	tools []mcpTool
	mu    sync.Mutex
	log   []string // every JSON-RPC message received, and "GET"/"DELETE"
	calls []json.RawMessage
}

func newMCPServer(t *testing.T, tools ...mcpTool) *mcpServer {
	s := &mcpServer{tools: tools}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *mcpServer) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *mcpServer) Calls() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.calls...)
}

func (s *mcpServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.mu.Lock()
		s.log = append(s.log, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	resp, ok := s.handle(body)
	if !ok { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Mcp-Session-Id", "conch-test-session")
	w.Header().Set("Content-Type", "application/json")
	w.Write(resp)
}

// handle answers one JSON-RPC message; ok is false for notifications.
func (s *mcpServer) handle(body []byte) (resp []byte, ok bool) {
	s.mu.Lock()
	s.log = append(s.log, string(body))
	s.mu.Unlock()
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.ID == nil {
		return nil, false
	}
	var result any
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		result = map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
			"serverInfo":      map[string]any{"name": "conch", "version": "0.0.1"},
		}
	case "tools/list":
		var list []any
		for _, t := range s.tools {
			tool := map[string]any{
				"name": t.Name, "description": t.Description,
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
					"text": map[string]any{"type": "string"},
				}},
			}
			if t.Annotations != nil {
				tool["annotations"] = t.Annotations
			}
			list = append(list, tool)
		}
		result = map[string]any{"tools": list}
	case "tools/call":
		s.mu.Lock()
		s.calls = append(s.calls, req.Params)
		s.mu.Unlock()
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(req.Params, &p)
		text := "unknown tool"
		for _, t := range s.tools {
			if t.Name == p.Name {
				text = t.Result
			}
		}
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": false}
	case "ping":
		result = map[string]any{}
	default:
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		return b, true
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	return b, true
}

// stdioMCPEnv makes the test binary an MCP server on stdio (see
// TestMain), with the tool ask_user answering stdioMCPResult.
const (
	stdioMCPEnv    = "CONCH_TEST_MCP_STDIO"
	stdioMCPResult = "the stdio server says yes"
)

func TestMain(m *testing.M) {
	if os.Getenv(stdioMCPEnv) == "1" {
		s := &mcpServer{tools: []mcpTool{{Name: "ask_user", Description: "Ask the Conch user a question.", Result: stdioMCPResult}}}
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if resp, ok := s.handle(sc.Bytes()); ok {
				os.Stdout.Write(append(resp, '\n'))
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
