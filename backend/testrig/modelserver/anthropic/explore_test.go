//go:build linux

package anthropic

// Exploration runs, skipped unless CONCH_EXPLORE=1: they print everything
// the CLI does for one scripted turn, to probe a new CLI version. Knobs:
//
//	CONCH_EXPLORE_ARGS     extra CLI flags (space-separated)
//	CONCH_EXPLORE_ENV      extra environment (space-separated K=V)
//	CONCH_EXPLORE_MINENV   run with only HOME, PATH, base URL and API key
//	TestExplore:
//	  CONCH_EXPLORE_STATUS       answer with this HTTP status (e.g. 429)
//	  CONCH_EXPLORE_FAILS        ... for this many requests only
//	  CONCH_EXPLORE_BODY         ... with this body
//	  CONCH_EXPLORE_RETRY_AFTER  ... and this retry-after
//	  CONCH_EXPLORE_HEADERS      ... and these headers (K=V ...)
//	TestExplorePermission:
//	  CONCH_EXPLORE_MODE     --permission-mode
//	  CONCH_EXPLORE_TOOL     Write (default), Bash or report
//	  CONCH_EXPLORE_CMD      the Bash command
//	  CONCH_EXPLORE_ANSWER   the permission tool's answer text
//	  CONCH_EXPLORE_ISERROR  answer with isError
//	  CONCH_EXPLORE_DELAY    wait this long before answering
//	  CONCH_EXPLORE_PROGRESS answer as SSE with progress this often
//	  CONCH_EXPLORE_MCP_EXTRA JSON merged into the server's --mcp-config entry
//	  CONCH_EXPLORE_NOPROMPT no --permission-prompt-tool
//
// CONCH_CLAUDE_DUMPDIR=<dir> saves the request bodies.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/testrig/modelserver"
)

// TestExplore runs one plain prompt and dumps everything (CONCH_EXPLORE=1).
func TestExplore(t *testing.T) {
	if os.Getenv("CONCH_EXPLORE") == "" {
		t.Skip("set CONCH_EXPLORE=1")
	}
	var mu sync.Mutex
	var stamps []time.Time
	fails := 1 << 30
	fmt.Sscan(os.Getenv("CONCH_EXPLORE_FAILS"), &fails)
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		mu.Lock()
		stamps = append(stamps, time.Now())
		n := len(stamps)
		mu.Unlock()
		if st := os.Getenv("CONCH_EXPLORE_STATUS"); st != "" && n <= fails {
			var code int
			fmt.Sscan(st, &code)
			body := os.Getenv("CONCH_EXPLORE_BODY")
			if body == "" {
				b, _ := json.Marshal(ErrorBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"))
				body = string(b)
			}
			h := map[string]string{}
			if ra := os.Getenv("CONCH_EXPLORE_RETRY_AFTER"); ra != "" {
				h["retry-after"] = ra
			}
			for _, kv := range strings.Fields(os.Getenv("CONCH_EXPLORE_HEADERS")) {
				k, v, _ := strings.Cut(kv, "=")
				h[k] = v
			}
			return modelserver.Reply{Status: code, Body: body, Headers: h}
		}
		return modelserver.Reply{Text: "Hello from the scripted model."}
	})
	r := startClaude(t, srv, runOpts{args: strings.Fields(os.Getenv("CONCH_EXPLORE_ARGS")), env: strings.Fields(os.Getenv("CONCH_EXPLORE_ENV"))})
	start := time.Now()
	r.send("Say hello.")
	i, _ := r.result(0, 600*time.Second)
	_ = i
	mu.Lock()
	for k, st := range stamps {
		t.Logf("STAMP request %d at +%v", k, st.Sub(start).Round(time.Millisecond))
	}
	mu.Unlock()
	r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Errorf("claude did not exit after stdin closed")
	}
	t.Logf("exit: %v", r.cmd.ProcessState)
	t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout(), r.stderrText())
	dumpRequests(t, srv)
	for _, q := range srv.Requests() {
		h := map[string]string{}
		for k := range q.Header {
			h[k] = q.Header.Get(k)
		}
		body := string(q.Body)
		if len(body) > 300 {
			body = body[:300] + "..."
		}
		t.Logf("REQ %s %s?%s headers=%s\nbody=%s", q.Method, q.Path, q.RawQuery, jsonString(h), body)
	}
	filepath.Walk(r.home, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			t.Logf("home file: %s %d", p, info.Size())
		}
		return nil
	})
}

// TestExplorePermission: CONCH_EXPLORE=1 CONCH_EXPLORE_MODE=<mode> CONCH_EXPLORE_TOOL=Write|Bash CONCH_EXPLORE_ANSWER=<json>
func TestExplorePermission(t *testing.T) {
	if os.Getenv("CONCH_EXPLORE") == "" {
		t.Skip("set CONCH_EXPLORE=1")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hello.txt")
	tool := os.Getenv("CONCH_EXPLORE_TOOL")
	answer := os.Getenv("CONCH_EXPLORE_ANSWER")
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		if res := turn.Results(); len(res) > 0 {
			return modelserver.Reply{Text: "done: " + res[len(res)-1].Text}
		}
		var args []byte
		switch tool {
		case "Bash":
			cmd := os.Getenv("CONCH_EXPLORE_CMD")
			if cmd == "" {
				cmd = "echo hi > " + path
			}
			args, _ = json.Marshal(map[string]string{"command": cmd, "description": "Run a command"})
		case "report":
			args, _ = json.Marshal(map[string]any{"summary": "all good", "ok": true})
			return modelserver.Reply{Calls: []modelserver.Call{{ID: "toolu_x_1", Name: "mcp__conch__report_result", Args: args}}}
		default:
			tool = "Write"
			args, _ = json.Marshal(map[string]string{"file_path": path, "content": "hi\n"})
		}
		return modelserver.Reply{Calls: []modelserver.Call{{ID: "toolu_x_1", Name: tool, Args: args}}}
	})
	mcp := newMCPServer(t, permissionTools, func(name string, args json.RawMessage) mcpResult {
		if name == "report_result" {
			return mcpResult{Text: "recorded"}
		}
		if d, err := time.ParseDuration(os.Getenv("CONCH_EXPLORE_DELAY")); err == nil {
			t.Logf("permission tool: waiting %v", d)
			time.Sleep(d)
		}
		return mcpResult{Text: answer, IsError: os.Getenv("CONCH_EXPLORE_ISERROR") != ""}
	})
	if d, err := time.ParseDuration(os.Getenv("CONCH_EXPLORE_PROGRESS")); err == nil {
		mcp.progress = d
	}
	var extra map[string]any
	if v := os.Getenv("CONCH_EXPLORE_MCP_EXTRA"); v != "" {
		json.Unmarshal([]byte(v), &extra)
	}
	args := []string{"--mcp-config", mcp.config(t, "conch", extra), "--strict-mcp-config"}
	if os.Getenv("CONCH_EXPLORE_NOPROMPT") == "" {
		args = append(args, "--permission-prompt-tool", "mcp__conch__approve")
	}
	if m := os.Getenv("CONCH_EXPLORE_MODE"); m != "" {
		args = append(args, "--permission-mode", m)
	}
	args = append(args, strings.Fields(os.Getenv("CONCH_EXPLORE_ARGS"))...)
	r := startClaude(t, srv, runOpts{dir: dir, args: args, env: strings.Fields(os.Getenv("CONCH_EXPLORE_ENV"))})
	r.send("Create hello.txt.")
	_, res := r.result(0, 900*time.Second)
	r.finish(20 * time.Second)
	_, statErr := os.Stat(path)
	t.Logf("file exists: %v", statErr == nil)
	t.Logf("RESULT: %s", jsonString(res))
	for _, c := range mcp.calls_() {
		t.Logf("MCP CALL %s %s", c.Name, c.Args)
	}
	for _, m := range r.all() {
		if m["type"] == "user" || m["type"] == "assistant" {
			t.Logf("LINE %s", jsonString(m))
		}
		if m["type"] == "system" && m["subtype"] == "init" {
			t.Logf("INIT tools=%v mcp_servers=%v permissionMode=%v", m["tools"], jsonString(m["mcp_servers"]), m["permissionMode"])
		}
		if m["type"] == "system" && m["subtype"] != "init" {
			t.Logf("SYSTEM %s", jsonString(m))
		}
	}
	for _, turn := range srv.Turns() {
		t.Logf("TURN tools=%v results=%+v", turn.Tools, turn.Results())
	}
	dumpRequests(t, srv)
}
