package anthropic

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conch/backend/internal/modelserver"
)

// claudeBinary is the Claude Code CLI to run: $CONCH_CLAUDE, else the one
// installed under /tmp/clis; the test is skipped when there is none.
func claudeBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("CONCH_CLAUDE")
	if bin == "" {
		bin = "/tmp/clis/node_modules/.bin/claude"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no Claude Code CLI at %s (set CONCH_CLAUDE to one): %v", bin, err)
	}
	return bin
}

// claudeEnv is the environment that runs the CLI isolated against srv: a
// fresh HOME, an API key, and no traffic but to srv.
func claudeEnv(home, url string) []string {
	return []string{
		"HOME=" + home,
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_BUG_COMMAND=1",
		"CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1",
	}
}

// claudeRun is one running CLI, its stdout read as stream-json lines.
type claudeRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dir   string
	home  string

	mu     sync.Mutex
	lines  []map[string]any
	raw    []string
	stderr strings.Builder
	more   chan struct{}
	done   chan struct{}
}

type runOpts struct {
	args []string // after the common stream-json flags
	env  []string // on top of claudeEnv
	dir  string   // working directory; a temp dir when empty
}

// startClaude starts the CLI in print mode with stream-json in and out;
// it is killed (with its process group) at the end of the test.
func startClaude(t *testing.T, srv *Server, o runOpts) *claudeRun {
	t.Helper()
	bin := claudeBinary(t)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "tmp"), 0o755)
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	args := append([]string{"-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}, o.args...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(claudeEnv(home, srv.URL), o.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r := &claudeRun{t: t, cmd: cmd, dir: dir, home: home, more: make(chan struct{}, 1), done: make(chan struct{})}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lockedWriter{mu: &r.mu, b: &r.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("started claude pid %d: %s", cmd.Process.Pid, strings.Join(args, " "))
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			var m map[string]any
			json.Unmarshal([]byte(line), &m)
			r.mu.Lock()
			r.raw = append(r.raw, line)
			r.lines = append(r.lines, m)
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
		}
		cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.kill()
		if os.Getenv("CONCH_CLAUDE_DUMP") != "" {
			r.mu.Lock()
			t.Logf("stdout of claude:\n%s\nstderr:\n%s", strings.Join(r.raw, "\n"), r.stderr.String())
			r.mu.Unlock()
		}
	})
	return r
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// kill ends the CLI and everything in its process group, and waits.
func (r *claudeRun) kill() {
	if r.cmd.Process == nil {
		return
	}
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.cmd.Process.Kill()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.t.Errorf("claude pid %d did not end after SIGKILL", r.cmd.Process.Pid)
	}
}

// send writes a user message to the CLI's stdin in stream-json.
func (r *claudeRun) send(text string) {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
	if _, err := r.stdin.Write(append(b, '\n')); err != nil {
		r.t.Fatalf("write stdin: %v", err)
	}
}

// wait waits for the first stdout line from index `from` on that pred
// accepts, and gives its index.
func (r *claudeRun) wait(from int, timeout time.Duration, what string, pred func(map[string]any) bool) (int, map[string]any) {
	r.t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		for i := from; i < len(r.lines); i++ {
			if r.lines[i] != nil && pred(r.lines[i]) {
				m := r.lines[i]
				r.mu.Unlock()
				return i, m
			}
		}
		r.mu.Unlock()
		select {
		case <-r.more:
		case <-r.done:
			// drain whatever came last
			r.mu.Lock()
			for i := from; i < len(r.lines); i++ {
				if r.lines[i] != nil && pred(r.lines[i]) {
					m := r.lines[i]
					r.mu.Unlock()
					return i, m
				}
			}
			r.mu.Unlock()
			r.t.Fatalf("claude ended (%v) before %s\nstdout:\n%s\nstderr:\n%s", r.cmd.ProcessState, what, r.stdout(), r.stderrText())
		case <-deadline:
			r.t.Fatalf("no %s within %v\nstdout:\n%s\nstderr:\n%s", what, timeout, r.stdout(), r.stderrText())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *claudeRun) result(from int, timeout time.Duration) (int, map[string]any) {
	r.t.Helper()
	return r.wait(from, timeout, "result line", isType("result"))
}

func (r *claudeRun) stdout() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.raw, "\n")
}

func (r *claudeRun) stderrText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

func (r *claudeRun) all() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.lines...)
}

func isType(typ string, subtype ...string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		if m["type"] != typ {
			return false
		}
		return len(subtype) == 0 || m["subtype"] == subtype[0]
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var _ = context.Background
var _ = fmt.Sprintf
var _ modelserver.Reply

// TestExplore runs one plain prompt and dumps everything (CONCH_EXPLORE=1).
func TestExplore(t *testing.T) {
	if os.Getenv("CONCH_EXPLORE") == "" {
		t.Skip("set CONCH_EXPLORE=1")
	}
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Hello from the scripted model."}
	})
	r := startClaude(t, srv, runOpts{args: strings.Fields(os.Getenv("CONCH_EXPLORE_ARGS"))})
	r.send("Say hello.")
	i, _ := r.result(0, 60*time.Second)
	_ = i
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
		if len(body) > 3000 {
			body = body[:3000] + "..."
		}
		t.Logf("REQ %s %s side=%v headers=%s\nbody=%s", q.Method, q.Path, q.Side, jsonString(h), body)
	}
	filepath.Walk(r.home, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			t.Logf("home file: %s %d", p, info.Size())
		}
		return nil
	})
}

// dumpRequests writes every request body to $CONCH_CLAUDE_DUMPDIR/<test>-<n>.json.
func dumpRequests(t *testing.T, srv *Server) {
	dir := os.Getenv("CONCH_CLAUDE_DUMPDIR")
	if dir == "" {
		return
	}
	os.MkdirAll(dir, 0o755)
	for i, q := range srv.Requests() {
		name := filepath.Join(dir, fmt.Sprintf("%s-%02d.json", strings.ReplaceAll(t.Name(), "/", "_"), i))
		os.WriteFile(name, q.Body, 0o644)
	}
}

// finish closes stdin and waits for the CLI to exit.
func (r *claudeRun) finish(timeout time.Duration) {
	r.t.Helper()
	r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(timeout):
		r.t.Errorf("claude did not exit within %v of its stdin closing", timeout)
	}
}

// TestClaudeText: one prompt, one text answer.
func TestClaudeText(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Hello from the scripted model."}
	})
	r := startClaude(t, srv, runOpts{})
	r.send("Say hello.")
	_, res := r.result(0, 60*time.Second)
	if res["subtype"] != "success" || res["result"] != "Hello from the scripted model." || res["is_error"] != false {
		t.Errorf("result = %s", jsonString(res))
	}
	r.finish(20 * time.Second)
	turns := srv.Turns()
	if len(turns) != 1 {
		t.Fatalf("%d turns, want 1", len(turns))
	}
	if got := turns[0].FirstUser(); got != "Say hello." {
		t.Errorf("first user message %q", got)
	}
	t.Logf("model %s, tools %v", turns[0].Model, turns[0].Tools)
	for _, q := range srv.Requests() {
		t.Logf("request: %s %s", q.Method, q.Path)
	}
	dumpRequests(t, srv)
}

// writeBrain asks for the Write tool once, then answers "done" once it
// sees the tool's result.
func writeBrain(path, content string) modelserver.Brain {
	return func(turn modelserver.Turn) modelserver.Reply {
		if res := turn.Results(); len(res) > 0 {
			return modelserver.Reply{Text: "done: " + res[len(res)-1].Text}
		}
		args, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
		return modelserver.Reply{Text: "Writing the file.", Calls: []modelserver.Call{{ID: "toolu_write_1", Name: "Write", Args: args}}}
	}
}

// TestClaudeWriteAcceptEdits: the model asks for Write; in acceptEdits the
// CLI writes the file and sends the tool_result back.
func TestClaudeWriteAcceptEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hello.txt")
	srv := New(t, writeBrain(path, "hi there\n"))
	r := startClaude(t, srv, runOpts{dir: dir, args: []string{"--permission-mode", "acceptEdits"}})
	r.send("Create hello.txt.")
	_, res := r.result(0, 60*time.Second)
	t.Logf("result: %s", jsonString(res))
	r.finish(20 * time.Second)
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "hi there\n" {
		t.Errorf("file: %q, %v", b, err)
	}
	turns := srv.Turns()
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2", len(turns))
	}
	rs := turns[1].Results()
	if len(rs) != 1 || rs[0].CallID != "toolu_write_1" {
		t.Fatalf("results of turn 2: %+v", rs)
	}
	t.Logf("tool result text: %q", rs[0].Text)
	dumpRequests(t, srv)
}

// permissionTools are the tools of the tests' MCP server "conch": the
// permission prompt tool and a result tool Conch could offer.
var permissionTools = []mcpTool{
	{
		Name:        "approve",
		Description: "Decides whether a tool call may run.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"tool_name":   map[string]any{"type": "string"},
			"input":       map[string]any{"type": "object"},
			"tool_use_id": map[string]any{"type": "string"},
		}, "required": []string{"tool_name", "input"}},
	},
	{
		Name:        "report_result",
		Description: "Reports the task's result to Conch.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"summary": map[string]any{"type": "string"},
			"ok":      map[string]any{"type": "boolean"},
		}, "required": []string{"summary", "ok"}},
	},
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
			args, _ = json.Marshal(map[string]string{"command": "echo hi > " + path, "description": "Write hi to a file"})
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
		return mcpResult{Text: answer}
	})
	args := []string{"--mcp-config", mcp.config(t, "conch"), "--strict-mcp-config"}
	if os.Getenv("CONCH_EXPLORE_NOPROMPT") == "" {
		args = append(args, "--permission-prompt-tool", "mcp__conch__approve")
	}
	if m := os.Getenv("CONCH_EXPLORE_MODE"); m != "" {
		args = append(args, "--permission-mode", m)
	}
	args = append(args, strings.Fields(os.Getenv("CONCH_EXPLORE_ARGS"))...)
	r := startClaude(t, srv, runOpts{dir: dir, args: args})
	r.send("Create hello.txt.")
	_, res := r.result(0, 90*time.Second)
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
