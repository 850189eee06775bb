// Command fakemcp is the MCP client half of the fake claude: it asks the
// permission question the way Claude Code does, through the server named
// in --mcp-config and the tool named by --permission-prompt-tool, and it
// checks every answer against the Streamable HTTP transport and MCP.
//
// It reads the approve tool's arguments from the file $FAKE_ASK and
// writes the answer's text to $FAKE_DIR/answer. Exit status: 0 allowed,
// 3 denied (or cancelled), 2 the server broke the protocol (on stderr).
//
// With FAKE_MCP_CANCEL set, it waits for the file $FAKE_DIR/asked (the
// test's Ask writes it), cancels the call with notifications/cancelled
// and expects the call to end with a JSON-RPC error, not an answer.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

const version = "2025-06-18"

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakemcp:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func flag(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

type client struct {
	url     string
	started bool // initialize done: send MCP-Protocol-Version
}

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends one message; it returns the HTTP status and body.
func (c *client) post(ctx context.Context, msg any) (int, string, []byte, error) {
	b, err := json.Marshal(msg)
	if err != nil {
		return 0, "", nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.started {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), body, err
}

// request sends a request and checks the reply is its JSON-RPC response.
func (c *client) request(ctx context.Context, id int, method string, params any) (*message, error) {
	status, ctype, body, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if status != http.StatusOK || !strings.HasPrefix(ctype, "application/json") {
		return nil, fmt.Errorf("%s: status %d, content type %q: %s", method, status, ctype, body)
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%s: %v: %s", method, err, body)
	}
	if m.JSONRPC != "2.0" || string(m.ID) != fmt.Sprint(id) {
		return nil, fmt.Errorf("%s: not the response to id %d: %s", method, id, body)
	}
	if (m.Error == nil) == (len(m.Result) == 0) {
		return nil, fmt.Errorf("%s: needs exactly one of result and error: %s", method, body)
	}
	return &m, nil
}

// notify sends a notification, which must get 202 and no body.
func (c *client) notify(ctx context.Context, method string, params any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	status, _, body, err := c.post(ctx, msg)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if status != http.StatusAccepted || len(body) != 0 {
		return fmt.Errorf("%s: status %d, body %q; want 202 and none", method, status, body)
	}
	return nil
}

func run(args []string) (int, error) {
	prompt := flag(args, "--permission-prompt-tool")
	server, tool, ok := strings.Cut(strings.TrimPrefix(prompt, "mcp__"), "__")
	if !ok || !strings.HasPrefix(prompt, "mcp__") {
		return 0, fmt.Errorf("--permission-prompt-tool %q is not an MCP tool", prompt)
	}
	path := flag(args, "--mcp-config")
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("--mcp-config: %w", err)
	}
	if st.Mode().Perm() != 0o600 {
		return 0, fmt.Errorf("--mcp-config %s has mode %v, want 0600", path, st.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return 0, fmt.Errorf("--mcp-config: %w", err)
	}
	srv, ok := cfg.MCPServers[server]
	if !ok || srv.Type != "http" {
		return 0, fmt.Errorf("--mcp-config has no http server %q: %s", server, raw)
	}
	u, err := url.Parse(srv.URL)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || len(u.Path) < len("/mcp/")+32 {
		return 0, fmt.Errorf("server url %q is not loopback with a token", srv.URL)
	}
	c := &client{url: srv.URL}
	ctx := context.Background()

	m, err := c.request(ctx, 0, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "fake-claude", "version": "0"},
	})
	if err != nil {
		return 0, err
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools *struct{} `json:"tools"`
		} `json:"capabilities"`
		ServerInfo struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &init) != nil || init.ProtocolVersion != version ||
		init.Capabilities.Tools == nil || init.ServerInfo.Name != "conch" {
		return 0, fmt.Errorf("initialize: bad result %s", m.Result)
	}
	c.started = true
	if err := c.notify(ctx, "notifications/initialized", nil); err != nil {
		return 0, err
	}
	// Claude's client opens an event stream when it may; this server
	// offers none, which it must say with 405.
	req, _ := http.NewRequest(http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		return 0, err
	} else if resp.Body.Close(); resp.StatusCode != http.StatusMethodNotAllowed {
		return 0, fmt.Errorf("GET: status %d, want 405", resp.StatusCode)
	}

	if m, err = c.request(ctx, 1, "tools/list", map[string]any{}); err != nil {
		return 0, err
	}
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	found := false
	if m.Error == nil && json.Unmarshal(m.Result, &list) == nil {
		for _, t := range list.Tools {
			_, hasName := t.InputSchema.Properties["tool_name"]
			_, hasInput := t.InputSchema.Properties["input"]
			found = found || t.Name == tool && t.InputSchema.Type == "object" && hasName && hasInput
		}
	}
	if !found {
		return 0, fmt.Errorf("tools/list: no tool %q taking tool_name and input: %s", tool, m.Result)
	}
	if m, err = c.request(ctx, 2, "ping", nil); err != nil || m.Error != nil {
		return 0, fmt.Errorf("ping: %v %+v", err, m)
	}

	raw, err = os.ReadFile(os.Getenv("FAKE_ASK"))
	if err != nil {
		return 0, err
	}
	var arguments map[string]any
	if err := json.Unmarshal(raw, &arguments); err != nil {
		return 0, fmt.Errorf("FAKE_ASK: %w", err)
	}
	call := map[string]any{"name": tool, "arguments": arguments}
	answerFile := filepath.Join(os.Getenv("FAKE_DIR"), "answer")
	if os.Getenv("FAKE_MCP_CANCEL") != "" {
		return cancel(c, call, answerFile)
	}

	if m, err = c.request(ctx, 3, "tools/call", call); err != nil {
		return 0, err
	}
	var result struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &result) != nil || len(result.Content) != 1 ||
		result.Content[0].Type != "text" || result.IsError {
		return 0, fmt.Errorf("tools/call: bad result %s (error %+v)", m.Result, m.Error)
	}
	text := result.Content[0].Text
	if err := os.WriteFile(answerFile, []byte(text+"\n"), 0o644); err != nil {
		return 0, err
	}
	var answer struct {
		Behavior     string         `json:"behavior"`
		UpdatedInput map[string]any `json:"updatedInput"`
		Message      string         `json:"message"`
	}
	if err := json.Unmarshal([]byte(text), &answer); err != nil {
		return 0, fmt.Errorf("tools/call: the answer is not JSON: %q", text)
	}
	switch {
	case answer.Behavior == "allow" && reflect.DeepEqual(answer.UpdatedInput, arguments["input"]):
		return 0, nil
	case answer.Behavior == "deny" && answer.Message != "":
		return 3, nil
	}
	return 0, fmt.Errorf("tools/call: answer %q is neither allow with the input nor deny with a message", text)
}

// cancel makes the call, waits for the person to be asked, then cancels.
func cancel(c *client, call map[string]any, answerFile string) (int, error) {
	ctx, abort := context.WithCancel(context.Background())
	defer abort()
	type outcome struct {
		m   *message
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		m, err := c.request(ctx, 3, "tools/call", call)
		done <- outcome{m, err}
	}()
	asked := filepath.Join(os.Getenv("FAKE_DIR"), "asked")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(asked); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the person was never asked")
		}
	}
	if err := c.notify(context.Background(), "notifications/cancelled", map[string]any{"requestId": 3, "reason": "interrupted"}); err != nil {
		return 0, err
	}
	select {
	case o := <-done:
		if o.err != nil {
			return 0, o.err
		}
		if o.m.Error == nil {
			return 0, fmt.Errorf("tools/call answered after it was cancelled: %s", o.m.Result)
		}
	case <-time.After(2 * time.Second):
		return 0, fmt.Errorf("tools/call went on after notifications/cancelled")
	}
	return 3, os.WriteFile(answerFile, nil, 0o644)
}
