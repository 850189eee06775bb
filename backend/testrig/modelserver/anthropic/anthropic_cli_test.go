//go:build linux

package anthropic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"conch/backend/testrig/agentbin"
	"conch/backend/testrig/modelserver"
)

// claudeBinary is the Claude Code CLI to run: $CONCH_CLAUDE, else the
// pinned one scripts/setup installs (see agentbin).
func claudeBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CONCH_CLAUDE"); bin != "" {
		return bin
	}
	return agentbin.Path(t, agentbin.Claude)
}

// claudeEnv is the environment that runs the CLI isolated against srv: a
// fresh HOME, an API key, and no traffic but to srv.
func claudeEnv(home, url string) []string {
	return []string{
		"HOME=" + home,
		"PATH=/usr/local/bin:/usr/bin:/bin",
		// Without SHELL the CLI picks zsh when it is installed (the tests
		// install it for the completions): these tests read bash's tree.
		"SHELL=/bin/bash",
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

var runs atomic.Int64

// claudeRun is one running CLI, its stdout read as stream-json lines.
type claudeRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dir   string
	home  string

	// marker is an environment entry only this run's processes carry,
	// so the processes it leaves (the Bash tool's, in sessions of their
	// own) can be found and killed.
	marker string

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
	marker := fmt.Sprintf("CONCH_TEST_RUN=%d-%d", os.Getpid(), runs.Add(1))
	cmd.Env = append(append(claudeEnv(home, srv.URL), marker), o.env...)
	if os.Getenv("CONCH_EXPLORE_MINENV") != "" {
		cmd.Env = append([]string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=test", marker}, o.env...)
	}
	// as Conch starts it (procgroup.Attr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r := &claudeRun{t: t, cmd: cmd, dir: dir, home: home, marker: marker, more: make(chan struct{}, 1), done: make(chan struct{})}
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
		if dir := os.Getenv("CONCH_CLAUDE_CAPTURE"); dir != "" {
			os.MkdirAll(dir, 0o755)
			name := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
			os.WriteFile(name+".jsonl", []byte(r.stdout()+"\n"), 0o644)
			os.WriteFile(name+".stderr", []byte(r.stderrText()), 0o644)
		}
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

// kill ends the CLI, everything in its process group and every process
// carrying its marker, and waits for the CLI.
func (r *claudeRun) kill() {
	if r.cmd.Process == nil {
		return
	}
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.cmd.Process.Kill()
	for _, p := range procsWithEnv(r.marker) {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
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

// lines of a type (and subtype) seen so far.
func (r *claudeRun) linesOf(typ string, subtype ...string) []map[string]any {
	var out []map[string]any
	for _, m := range r.all() {
		if m != nil && isType(typ, subtype...)(m) {
			out = append(out, m)
		}
	}
	return out
}

// toolResults are the tool_result blocks of the CLI's "user" lines.
func (r *claudeRun) toolResults() []map[string]any {
	var out []map[string]any
	for _, m := range r.linesOf("user") {
		msg, _ := m["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			if b, ok := b.(map[string]any); ok && b["type"] == "tool_result" {
				out = append(out, b)
			}
		}
	}
	return out
}

// contentText is a tool_result's content as text (a string or text blocks).
func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			if b, ok := b.(map[string]any); ok {
				if s, ok := b["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// TestClaudeText: one prompt, one text answer; then a second prompt to the
// same process, which answers it with the whole conversation.
func TestClaudeText(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: fmt.Sprintf("Answer %d from the scripted model.", len(turn.Messages)/2+1)}
	})
	r := startClaude(t, srv, runOpts{})
	r.send("Say hello.")
	i, res := r.result(0, 60*time.Second)
	if res["subtype"] != "success" || res["result"] != "Answer 1 from the scripted model." || res["is_error"] != false {
		t.Errorf("result = %s", jsonString(res))
	}
	inits := r.linesOf("system", "init")
	if len(inits) != 1 {
		t.Fatalf("%d init lines", len(inits))
	}
	init := inits[0]
	if init["permissionMode"] != "default" || init["apiKeySource"] != "ANTHROPIC_API_KEY" || init["session_id"] == "" {
		t.Errorf("init: permissionMode %v apiKeySource %v session_id %v", init["permissionMode"], init["apiKeySource"], init["session_id"])
	}
	t.Logf("init: model %v, claude_code_version %v, tools %v", init["model"], init["claude_code_version"], init["tools"])

	// A second message on the same stdin is a second turn of the same
	// conversation.
	r.send("Again, please.")
	_, res2 := r.result(i+1, 60*time.Second)
	if res2["result"] != "Answer 2 from the scripted model." || res2["session_id"] != res["session_id"] {
		t.Errorf("second result = %s", jsonString(res2))
	}
	r.finish(20 * time.Second)
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}

	turns := srv.Turns()
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2", len(turns))
	}
	if got := turns[0].FirstUser(); got != "Say hello." {
		t.Errorf("first user message %q", got)
	}
	var roles []string
	for _, m := range turns[1].Messages {
		roles = append(roles, m.Role+":"+m.Text)
	}
	if want := []string{"user:Say hello.", "assistant:Answer 1 from the scripted model.", "user:Again, please."}; strings.Join(roles, "|") != strings.Join(want, "|") {
		t.Errorf("second turn's messages %q, want %q", roles, want)
	}
	if !strings.Contains(turns[0].System, "Claude") {
		t.Errorf("system prompt %.200q", turns[0].System)
	}
	t.Logf("model %s, tools %v", turns[0].Model, turns[0].Tools)
	for _, q := range srv.Requests() {
		if q.Method != "POST" || q.Path != "/v1/messages" {
			t.Errorf("unexpected request %s %s", q.Method, q.Path)
		}
		if q.Header.Get("X-Api-Key") != "test" {
			t.Errorf("x-api-key %q", q.Header.Get("X-Api-Key"))
		}
	}
	dumpRequests(t, srv)
}

// writeBrain asks for the Write tool once, then answers "done: <result>"
// once it sees the tool's result.
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
	r.finish(20 * time.Second)
	if res["is_error"] != false || num(res["num_turns"]) != 2 {
		t.Errorf("result: %s", jsonString(res))
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "hi there\n" {
		t.Errorf("file: %q, %v", b, err)
	}
	turns := srv.Turns()
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2", len(turns))
	}
	rs := turns[1].Results()
	if len(rs) != 1 || rs[0].CallID != "toolu_write_1" || !strings.HasPrefix(rs[0].Text, "File created successfully at: "+path) {
		t.Fatalf("results of turn 2: %+v", rs)
	}
	// the assistant message with the call is in the history
	var calls []modelserver.Call
	for _, m := range turns[1].Messages {
		calls = append(calls, m.Calls...)
	}
	if len(calls) != 1 || calls[0].Name != "Write" || calls[0].ID != "toolu_write_1" {
		t.Errorf("calls in history: %+v", calls)
	}
	trs := r.toolResults()
	if len(trs) != 1 || trs[0]["tool_use_id"] != "toolu_write_1" {
		t.Errorf("tool_result lines: %s", jsonString(trs))
	}
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

// permRun is one run of a single tool call with Conch's MCP server.
type permRun struct {
	r    *claudeRun
	srv  *Server
	mcp  *mcpServer
	res  map[string]any
	dir  string
	path string // hello.txt in dir
}

type permCase struct {
	mode    string   // --permission-mode
	call    string   // tool name the model calls
	args    any      // its arguments (with PATH for hello.txt's path)
	answer  string   // the permission tool's answer text
	isError bool     // answer with isError
	noTool  bool     // no --permission-prompt-tool
	flags   []string // more flags
	env     []string
}

// runPermission runs the CLI with Conch's MCP server as its permission
// prompt tool; the model makes c's call once, then answers "done: <text>".
func runPermission(t *testing.T, c permCase) permRun {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "hello.txt")
	raw, _ := json.Marshal(c.args)
	raw = []byte(strings.ReplaceAll(string(raw), "PATH", path))
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		if res := turn.Results(); len(res) > 0 {
			return modelserver.Reply{Text: "done: " + res[len(res)-1].Text}
		}
		return modelserver.Reply{Calls: []modelserver.Call{{ID: "toolu_perm_1", Name: c.call, Args: raw}}}
	})
	mcp := newMCPServer(t, permissionTools, func(name string, args json.RawMessage) mcpResult {
		if name == "report_result" {
			return mcpResult{Text: "recorded"}
		}
		return mcpResult{Text: strings.ReplaceAll(c.answer, "PATH", path), IsError: c.isError}
	})
	args := []string{"--mcp-config", mcp.config(t, "conch"), "--strict-mcp-config"}
	if !c.noTool {
		args = append(args, "--permission-prompt-tool", "mcp__conch__approve")
	}
	if c.mode != "" {
		args = append(args, "--permission-mode", c.mode)
	}
	args = append(args, c.flags...)
	r := startClaude(t, srv, runOpts{dir: dir, args: args, env: c.env})
	r.send("Do the thing.")
	_, res := r.result(0, 90*time.Second)
	r.finish(20 * time.Second)
	return permRun{r: r, srv: srv, mcp: mcp, res: res, dir: dir, path: path}
}

// asked are the permission tool's calls.
func (p permRun) asked() []mcpCall {
	var out []mcpCall
	for _, c := range p.mcp.calls_() {
		if c.Name == "approve" {
			out = append(out, c)
		}
	}
	return out
}

// result is the one tool_result the CLI sent back.
func (p permRun) result(t *testing.T) (text string, isError bool, line map[string]any) {
	t.Helper()
	trs := p.r.toolResults()
	if len(trs) != 1 {
		t.Fatalf("%d tool results, want 1:\n%s", len(trs), p.r.stdout())
	}
	isErr, _ := trs[0]["is_error"].(bool)
	return contentText(trs[0]["content"]), isErr, trs[0]
}

func (p permRun) file() (string, bool) {
	b, err := os.ReadFile(p.path)
	return string(b), err == nil
}

var (
	writeArgs = map[string]string{"file_path": "PATH", "content": "hi\n"}
	allow     = `{"behavior":"allow","updatedInput":{}}`
)

func bashArgs(cmd string) map[string]string {
	return map[string]string{"command": cmd, "description": "Run a command"}
}

// TestClaudePermissionTool: with --permission-prompt-tool mcp__conch__approve
// the CLI asks Conch's MCP tool before a tool call its mode does not allow,
// with {tool_name, input, tool_use_id}, and takes a JSON text answer.
func TestClaudePermissionTool(t *testing.T) {
	t.Run("default/Write/allow", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "Write", args: writeArgs, answer: allow})
		asked := p.asked()
		if len(asked) != 1 {
			t.Fatalf("asked %d times", len(asked))
		}
		var req map[string]any
		json.Unmarshal(asked[0].Args, &req)
		want := map[string]any{"tool_name": "Write", "input": map[string]any{"file_path": p.path, "content": "hi\n"}, "tool_use_id": "toolu_perm_1"}
		if jsonString(req) != jsonString(want) {
			t.Errorf("permission request %s, want %s", asked[0].Args, jsonString(want))
		}
		// the request's _meta names the call too
		for _, m := range p.mcp.messages() {
			if m.Method == "tools/call" {
				t.Logf("tools/call as sent: %s", m.Body)
			}
		}
		if got, ok := p.file(); !ok || got != "hi\n" {
			t.Errorf("file %q %v", got, ok)
		}
		text, isErr, line := p.result(t)
		if isErr || !strings.HasPrefix(text, "File created successfully") {
			t.Errorf("tool result %q is_error=%v", text, isErr)
		}
		_ = line
		meta := p.r.linesOf("user")
		t.Logf("user line: %s", jsonString(meta[len(meta)-1]))
	})
	t.Run("default/Write/allow-updatedInput", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "Write", args: writeArgs,
			answer: `{"behavior":"allow","updatedInput":{"file_path":"PATH","content":"changed by Conch\n"}}`})
		if got, ok := p.file(); !ok || got != "changed by Conch\n" {
			t.Errorf("file %q %v", got, ok)
		}
		text, isErr, line := p.result(t)
		if isErr || !strings.Contains(text, "The user modified your proposed content before accepting it.") {
			t.Errorf("tool result %q is_error=%v", text, isErr)
		}
		t.Logf("tool result %q; tool_result block %s", text, jsonString(line))
	})
	t.Run("default/Write/deny", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "Write", args: writeArgs, answer: `{"behavior":"deny","message":"Conch says no"}`})
		if len(p.asked()) != 1 {
			t.Errorf("asked %d times", len(p.asked()))
		}
		if _, ok := p.file(); ok {
			t.Errorf("file written despite deny")
		}
		text, isErr, _ := p.result(t)
		if !isErr || text != "Conch says no" {
			t.Errorf("tool result %q is_error=%v", text, isErr)
		}
		denials, _ := p.res["permission_denials"].([]any)
		if len(denials) != 1 || p.res["subtype"] != "success" || p.res["result"] != "done: Conch says no" {
			t.Errorf("result: %s", jsonString(p.res))
		}
		t.Logf("permission_denials: %s", jsonString(denials))
		if n := len(p.r.linesOf("system", "permission_denied")); n != 0 {
			t.Logf("%d system permission_denied lines on a prompt-tool deny", n)
		}
	})
	t.Run("default/Write/deny-interrupt", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "Write", args: writeArgs, answer: `{"behavior":"deny","message":"stop now","interrupt":true}`})
		if _, ok := p.file(); ok {
			t.Errorf("file written despite deny")
		}
		if len(p.srv.Turns()) != 1 {
			t.Errorf("%d model requests; an interrupting deny should end the turn", len(p.srv.Turns()))
		}
		if p.res["subtype"] != "error_during_execution" || p.res["is_error"] != true || p.res["terminal_reason"] != "aborted_tools" {
			t.Errorf("result: %s", jsonString(p.res))
		}
		text, _, _ := p.result(t)
		t.Logf("tool result: %q", text)
	})
	t.Run("default/Write/isError", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "Write", args: writeArgs, answer: allow, isError: true})
		if _, ok := p.file(); ok {
			t.Errorf("file written although the permission tool failed")
		}
		text, isErr, _ := p.result(t)
		if !isErr || !strings.Contains(text, "Error calling tool (Write)") {
			t.Errorf("tool result %q is_error=%v", text, isErr)
		}
	})
	t.Run("default/Write/invalid-answer", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "Write", args: writeArgs, answer: "yes"})
		if _, ok := p.file(); ok {
			t.Errorf("file written on an invalid answer")
		}
		text, isErr, _ := p.result(t)
		if !isErr || !strings.Contains(text, "The permission prompt tool returned an invalid permission result") {
			t.Errorf("tool result %q is_error=%v", text, isErr)
		}
	})
	t.Run("default/Write/partial-updatedInput", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "Write", args: writeArgs, answer: `{"behavior":"allow","updatedInput":{"content":"only this\n"}}`})
		if _, ok := p.file(); ok {
			t.Errorf("file written from a partial updatedInput")
		}
		text, isErr, _ := p.result(t)
		if !isErr || !strings.Contains(text, "updatedInput for Write that failed schema validation") {
			t.Errorf("tool result %q is_error=%v", text, isErr)
		}
	})
	for _, c := range []struct {
		name, mode, cmd string
		asked           bool
	}{
		{"default/Bash/redirect", "default", "echo hi > PATH", true},
		{"default/Bash/touch", "default", "touch PATH", true},
		{"default/Bash/read-only", "default", "ls", false},
		{"acceptEdits/Bash/redirect", "acceptEdits", "echo hi > PATH", false},
		{"acceptEdits/Bash/python", "acceptEdits", `python3 -c "open('PATH','w').write('hi')"`, true},
		{"acceptEdits/Bash/read-outside", "acceptEdits", "cat /etc/hostname", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := runPermission(t, permCase{mode: c.mode, call: "Bash", args: bashArgs(c.cmd), answer: allow})
			asked := p.asked()
			if (len(asked) == 1) != c.asked {
				t.Errorf("asked %d times, want asked=%v", len(asked), c.asked)
			}
			if len(asked) == 1 {
				var req struct {
					ToolName string            `json:"tool_name"`
					Input    map[string]string `json:"input"`
				}
				json.Unmarshal(asked[0].Args, &req)
				if req.ToolName != "Bash" || req.Input["command"] != strings.ReplaceAll(c.cmd, "PATH", p.path) {
					t.Errorf("permission request %s", asked[0].Args)
				}
			}
			text, isErr, line := p.result(t)
			if isErr {
				t.Errorf("tool result %q is_error", text)
			}
			t.Logf("tool_result_meta %s", jsonString(line))
			for _, u := range p.r.linesOf("user") {
				if m, ok := u["tool_result_meta"]; ok {
					t.Logf("tool_result_meta: %s", jsonString(m))
				}
			}
		})
	}
	t.Run("acceptEdits/Write", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "acceptEdits", call: "Write", args: writeArgs, answer: `{"behavior":"deny","message":"must not be asked"}`})
		if len(p.asked()) != 0 {
			t.Errorf("asked %d times", len(p.asked()))
		}
		if got, ok := p.file(); !ok || got != "hi\n" {
			t.Errorf("file %q %v", got, ok)
		}
	})
	t.Run("plan/Write", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "plan", call: "Write", args: writeArgs, answer: allow})
		got, ok := p.file()
		t.Logf("plan mode: asked %d times, file written %v (%q)", len(p.asked()), ok, got)
		if len(p.asked()) != 1 {
			t.Errorf("asked %d times", len(p.asked()))
		}
	})
	t.Run("dontAsk/Bash", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "dontAsk", call: "Bash", args: bashArgs("echo hi > PATH"), answer: allow})
		if len(p.asked()) != 0 {
			t.Errorf("asked %d times", len(p.asked()))
		}
		if _, ok := p.file(); ok {
			t.Errorf("file written in dontAsk")
		}
		text, isErr, _ := p.result(t)
		if !isErr || !strings.HasPrefix(text, "Permission to use Bash has been denied because Claude Code is running in don't ask mode.") {
			t.Errorf("tool result %q is_error=%v", text, isErr)
		}
	})
	t.Run("allowedTools/Bash", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "Bash", args: bashArgs("echo hi > PATH"), answer: `{"behavior":"deny","message":"must not be asked"}`,
			flags: []string{"--allowedTools", "Bash"}})
		if len(p.asked()) != 0 {
			t.Errorf("asked %d times", len(p.asked()))
		}
		if got, ok := p.file(); !ok || got != "hi\n" {
			t.Errorf("file %q %v", got, ok)
		}
	})
}

// proc is what /proc says of one process.
type proc struct {
	pid, ppid, pgid, sid int
	comm                 string
	cmdline              string
	environ              []string
}

func readProc(pid int) (proc, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid pgrp session ...
	s := string(stat)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < 0 {
		return proc{}, false
	}
	p := proc{pid: pid, comm: s[open+1 : close]}
	var state string
	fmt.Sscan(s[close+1:], &state, &p.ppid, &p.pgid, &p.sid)
	if state == "Z" {
		return proc{}, false
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.cmdline = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range strings.Split(string(env), "\x00") {
		if kv != "" {
			p.environ = append(p.environ, kv)
		}
	}
	return p, true
}

// procsWithEnv are the live processes whose environment holds kv.
func procsWithEnv(kv string) []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		p, ok := readProc(pid)
		if !ok {
			continue
		}
		for _, v := range p.environ {
			if v == kv {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func (p proc) env(key string) (string, bool) {
	for _, kv := range p.environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 600 {
			lines[i] = l[:600] + "..."
		}
	}
	return strings.Join(lines, "\n")
}

// TestClaudeStopBashTree: the model runs `sleep 300` through Bash. The
// Bash tool runs it in a session (and process group) of its own, with the
// CLI's environment; SIGTERM, SIGINT and an interrupt control_request end
// it, SIGKILL of the CLI leaves it running.
func TestClaudeStopBashTree(t *testing.T) {
	for _, c := range []struct {
		name     string
		sig      syscall.Signal // 0: an interrupt control_request on stdin
		survives bool
	}{
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGKILL", syscall.SIGKILL, true},
		{"SIGINT", syscall.SIGINT, false},
		{"interrupt", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
				if len(turn.Results()) > 0 {
					return modelserver.Reply{Text: "slept"}
				}
				// A bare `sleep 300` is refused by the Bash tool ("Blocked:
				// standalone sleep 300"), so it is wrapped.
				args, _ := json.Marshal(map[string]any{"command": "echo started; sleep 300; echo finished", "description": "Wait five minutes", "timeout": 600000})
				return modelserver.Reply{Calls: []modelserver.Call{{ID: "toolu_sleep_1", Name: "Bash", Args: args}}}
			})
			r := startClaude(t, srv, runOpts{args: []string{"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}})
			r.send("Sleep for five minutes.")
			var sleeps []proc
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && len(sleeps) == 0; {
				for _, p := range procsWithEnv(r.marker) {
					if p.comm == "sleep" {
						sleeps = append(sleeps, p)
					}
				}
				if strings.Contains(r.stdout(), `"type":"result"`) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if len(sleeps) != 1 {
				t.Fatalf("%d sleep processes\nstdout:\n%s\nstderr:\n%s", len(sleeps), r.stdout(), r.stderrText())
			}
			s := sleeps[0]
			cli, _ := readProc(r.cmd.Process.Pid)
			t.Logf("CLI   pid=%d ppid=%d pgid=%d sid=%d", cli.pid, cli.ppid, cli.pgid, cli.sid)
			for _, p := range procsWithEnv(r.marker) {
				t.Logf("child pid=%d ppid=%d pgid=%d sid=%d comm=%s cmdline=%.300q", p.pid, p.ppid, p.pgid, p.sid, p.comm, p.cmdline)
			}
			shell, _ := readProc(s.ppid)
			if shell.comm != "bash" || shell.ppid != cli.pid {
				t.Errorf("sleep's parent is %d %s (ppid %d), want a bash child of the CLI", shell.pid, shell.comm, shell.ppid)
			}
			if s.sid == cli.sid || s.pgid == cli.pgid || shell.sid != shell.pid || s.sid != shell.pid {
				t.Errorf("sleep sid %d pgid %d, shell pid %d sid %d, CLI sid %d pgid %d: want the shell leading a new session",
					s.sid, s.pgid, shell.pid, shell.sid, cli.sid, cli.pgid)
			}
			if v, ok := s.env("CONCH_TEST_RUN"); !ok || "CONCH_TEST_RUN="+v != r.marker {
				t.Errorf("sleep lost the marker %s (has %q)", r.marker, v)
			}
			for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HOME"} {
				if _, ok := s.env(k); !ok {
					t.Errorf("sleep lacks %s", k)
				}
			}
			base := map[string]bool{}
			for _, kv := range append(claudeEnv(r.home, srv.URL), r.marker) {
				k, _, _ := strings.Cut(kv, "=")
				base[k] = true
			}
			var added []string
			for _, kv := range s.environ {
				if k, _, _ := strings.Cut(kv, "="); !base[k] {
					added = append(added, kv)
				}
			}
			t.Logf("environment the CLI adds for its tools: %q", added)

			if c.sig == 0 {
				io.WriteString(r.stdin, `{"type":"control_request","request_id":"conch-int-1","request":{"subtype":"interrupt"}}`+"\n")
				_, resp := r.wait(0, 20*time.Second, "control_response", isType("control_response"))
				t.Logf("control_response: %s", jsonString(resp))
				_, res := r.result(0, 20*time.Second)
				t.Logf("result after the interrupt: subtype %v is_error %v terminal_reason %v", res["subtype"], res["is_error"], res["terminal_reason"])
				if _, ok := readProc(cli.pid); !ok {
					t.Errorf("CLI ended on an interrupt")
				}
			} else {
				syscall.Kill(cli.pid, c.sig)
				select {
				case <-r.done:
					t.Logf("CLI exited on %v: %v", c.sig, r.cmd.ProcessState)
				case <-time.After(20 * time.Second):
					t.Fatalf("CLI still running 20s after %v", c.sig)
				}
			}
			time.Sleep(2 * time.Second)
			q, alive := readProc(s.pid)
			alive = alive && q.comm == "sleep"
			if alive != c.survives {
				t.Errorf("sleep alive=%v after %s, want %v", alive, c.name, c.survives)
			}
			if alive {
				t.Logf("sleep %d survived, ppid %d", q.pid, q.ppid)
			}
			trs := r.toolResults()
			for _, tr := range trs {
				t.Logf("tool_result: %.300s", contentText(tr["content"]))
			}
			t.Logf("last stdout lines:\n%s", lastLines(r.stdout(), 3))
		})
	}
}

// TestClaudeBypassPermissions: as root, bypassPermissions is refused (exit
// 1) unless IS_SANDBOX=1; then nothing asks the permission tool.
func TestClaudeBypassPermissions(t *testing.T) {
	if os.Getuid() == 0 {
		t.Run("root", func(t *testing.T) {
			srv := New(t, func(modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "hi"} })
			r := startClaude(t, srv, runOpts{args: []string{"--permission-mode", "bypassPermissions"}})
			r.send("hi")
			select {
			case <-r.done:
			case <-time.After(30 * time.Second):
				t.Fatal("claude still running")
			}
			const want = "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
			if code := r.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(r.stderrText(), want) {
				t.Errorf("exit %d, stderr %q", code, r.stderrText())
			}
			if r.stdout() != "" || len(srv.Requests()) != 0 {
				t.Errorf("stdout %q, %d requests", r.stdout(), len(srv.Requests()))
			}
		})
	}
	t.Run("IS_SANDBOX", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "bypassPermissions", call: "Bash", args: bashArgs("echo hi > PATH"),
			answer: `{"behavior":"deny","message":"must not be asked"}`, env: []string{"IS_SANDBOX=1"}})
		if len(p.asked()) != 0 {
			t.Errorf("asked %d times", len(p.asked()))
		}
		if got, ok := p.file(); !ok || got != "hi\n" {
			t.Errorf("file %q %v", got, ok)
		}
		if m := p.r.linesOf("system", "init"); len(m) != 1 || m[0]["permissionMode"] != "bypassPermissions" {
			t.Errorf("init permissionMode %v", m[0]["permissionMode"])
		}
	})
}

// TestClaudeNoPromptTool: in default mode with no permission prompt tool,
// a call that needs permission is refused, with a system permission_denied
// line.
func TestClaudeNoPromptTool(t *testing.T) {
	p := runPermission(t, permCase{mode: "default", call: "Write", args: writeArgs, noTool: true})
	if _, ok := p.file(); ok {
		t.Errorf("file written")
	}
	text, isErr, _ := p.result(t)
	want := "Claude requested permissions to write to " + p.path + ", but you haven't granted it yet."
	if !isErr || text != want {
		t.Errorf("tool result %q is_error=%v, want %q", text, isErr, want)
	}
	denied := p.r.linesOf("system", "permission_denied")
	if len(denied) != 1 || denied[0]["tool_name"] != "Write" || denied[0]["tool_use_id"] != "toolu_perm_1" || denied[0]["message"] != want {
		t.Errorf("permission_denied lines: %s", jsonString(denied))
	}
}

// TestClaudePartialMessages: --include-partial-messages adds a stream_event
// line for every SSE event of the model's answer.
func TestClaudePartialMessages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hello.txt")
	srv := New(t, writeBrain(path, "partial\n"))
	r := startClaude(t, srv, runOpts{dir: dir, args: []string{"--permission-mode", "acceptEdits", "--include-partial-messages"}})
	r.send("Create hello.txt.")
	_, res := r.result(0, 60*time.Second)
	r.finish(20 * time.Second)
	if res["is_error"] != false {
		t.Fatalf("result %s", jsonString(res))
	}
	var kinds []string
	var text, js strings.Builder
	for _, m := range r.linesOf("stream_event") {
		ev, _ := m["event"].(map[string]any)
		kind, _ := ev["type"].(string)
		if d, ok := ev["delta"].(map[string]any); ok && kind == "content_block_delta" {
			kind += "/" + d["type"].(string)
			if num(ev["index"]) == 0 {
				text.WriteString(fmt.Sprint(d["text"]))
			} else if s, ok := d["partial_json"].(string); ok {
				js.WriteString(s)
			}
		}
		if b, ok := ev["content_block"].(map[string]any); ok {
			kind += "/" + b["type"].(string)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != kind {
			kinds = append(kinds, kind)
		}
		if m["session_id"] == nil || m["uuid"] == nil {
			t.Errorf("stream_event without session_id or uuid: %s", jsonString(m))
		}
	}
	got := strings.Join(kinds, " ")
	want := "message_start content_block_start/text content_block_delta/text_delta content_block_stop " +
		"content_block_start/tool_use content_block_delta/input_json_delta content_block_stop message_delta message_stop " +
		"message_start content_block_start/text content_block_delta/text_delta content_block_stop message_delta message_stop"
	if got != want {
		t.Errorf("stream events:\n got %s\nwant %s", got, want)
	}
	if !strings.HasPrefix(text.String(), "Writing the file.") {
		t.Errorf("text deltas %q", text.String())
	}
	if js.String() != `{"content":"partial\n","file_path":"`+path+`"}` {
		t.Errorf("input_json_delta joined: %s", js.String())
	}
	// The whole assistant messages still come, one line per content block.
	if n := len(r.linesOf("assistant")); n != 3 {
		t.Errorf("%d assistant lines, want 3", n)
	}
	for _, m := range r.linesOf("system") {
		if m["subtype"] != "init" {
			t.Logf("system line: %s", jsonString(m))
		}
	}
}

// rateLimitBrain answers 429 (with retryAfter, if any) to the first fails
// requests, then text.
func rateLimitBrain(fails int, retryAfter string) (modelserver.Brain, func() []time.Time) {
	var mu sync.Mutex
	var at []time.Time
	return func(turn modelserver.Turn) modelserver.Reply {
			mu.Lock()
			at = append(at, time.Now())
			n := len(at)
			mu.Unlock()
			if n <= fails {
				return RateLimit(retryAfter)
			}
			return modelserver.Reply{Text: "Recovered."}
		}, func() []time.Time {
			mu.Lock()
			defer mu.Unlock()
			return append([]time.Time(nil), at...)
		}
}

const rateLimitResult = "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit"

// TestClaudeRateLimit: a 429 is retried CLAUDE_CODE_MAX_RETRIES times
// (default 10), each retry announced by a system api_retry line; then the
// turn ends with an is_error result naming the error, and the process
// takes the next message.
func TestClaudeRateLimit(t *testing.T) {
	t.Run("exhausted", func(t *testing.T) {
		brain, at := rateLimitBrain(3, "")
		srv := New(t, brain)
		r := startClaude(t, srv, runOpts{env: []string{"CLAUDE_CODE_MAX_RETRIES=2"}})
		r.send("Say hello.")
		i, res := r.result(0, 60*time.Second)
		if n := len(at()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
		retries := r.linesOf("system", "api_retry")
		if len(retries) != 2 {
			t.Fatalf("%d api_retry lines, want 2", len(retries))
		}
		for k, m := range retries {
			if num(m["attempt"]) != float64(k+1) || num(m["max_retries"]) != 2 || num(m["error_status"]) != 429 ||
				m["error"] != "rate_limit" || num(m["retry_delay_ms"]) < 400 || m["session_id"] == nil {
				t.Errorf("api_retry %d: %s", k, jsonString(m))
			}
		}
		t.Logf("api_retry: %s", jsonString(retries[0]))
		if res["is_error"] != true || res["subtype"] != "success" || num(res["api_error_status"]) != 429 ||
			res["api_error_type"] != "rate_limit_error" || res["terminal_reason"] != "api_error" || res["result"] != rateLimitResult {
			t.Errorf("result %s", jsonString(res))
		}
		as := r.linesOf("assistant")
		if len(as) != 1 || as[0]["error"] != "rate_limit" || as[0]["is_api_error_message"] != true {
			t.Errorf("assistant lines %s", jsonString(as))
		}
		// still alive: the next message is a new try
		r.send("Try again.")
		_, res2 := r.result(i+1, 60*time.Second)
		if res2["is_error"] != false || res2["result"] != "Recovered." {
			t.Errorf("second result %s", jsonString(res2))
		}
		r.finish(20 * time.Second)
		t.Logf("exit code after an error then a success: %d", r.cmd.ProcessState.ExitCode())
	})
	t.Run("retry-after", func(t *testing.T) {
		brain, at := rateLimitBrain(1, "3")
		srv := New(t, brain)
		r := startClaude(t, srv, runOpts{env: []string{"CLAUDE_CODE_MAX_RETRIES=1"}})
		r.send("Say hello.")
		_, res := r.result(0, 60*time.Second)
		r.finish(20 * time.Second)
		ts := at()
		retries := r.linesOf("system", "api_retry")
		if len(ts) != 2 || len(retries) != 1 || res["result"] != "Recovered." {
			t.Fatalf("%d requests, %d retries, result %s", len(ts), len(retries), jsonString(res))
		}
		if d := num(retries[0]["retry_delay_ms"]); d < 3000 || ts[1].Sub(ts[0]) < 3*time.Second {
			t.Errorf("retry_delay_ms %v, waited %v: want retry-after 3s honoured", d, ts[1].Sub(ts[0]))
		}
		t.Logf("retry-after 3: retry_delay_ms %v, waited %v", retries[0]["retry_delay_ms"], ts[1].Sub(ts[0]))
		if code := r.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("exit %d", code)
		}
	})
	t.Run("no-retries", func(t *testing.T) {
		brain, at := rateLimitBrain(1, "")
		srv := New(t, brain)
		r := startClaude(t, srv, runOpts{env: []string{"CLAUDE_CODE_MAX_RETRIES=0"}})
		r.send("Say hello.")
		_, res := r.result(0, 60*time.Second)
		r.finish(20 * time.Second)
		if len(at()) != 1 || len(r.linesOf("system", "api_retry")) != 0 || res["result"] != rateLimitResult {
			t.Errorf("%d requests, result %s", len(at()), jsonString(res))
		}
		// A process whose last turn failed exits 1 when its stdin closes.
		if code := r.cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("exit %d", code)
		}
	})
	t.Run("overloaded", func(t *testing.T) {
		srv := New(t, func(modelserver.Turn) modelserver.Reply {
			b, _ := json.Marshal(ErrorBody("overloaded_error", "Overloaded"))
			return modelserver.Reply{Status: 529, Body: string(b)}
		})
		r := startClaude(t, srv, runOpts{env: []string{"CLAUDE_CODE_MAX_RETRIES=1"}})
		r.send("Say hello.")
		_, res := r.result(0, 60*time.Second)
		r.finish(20 * time.Second)
		retries := r.linesOf("system", "api_retry")
		if len(retries) != 1 || retries[0]["error"] != "overloaded" || num(retries[0]["error_status"]) != 529 {
			t.Errorf("api_retry %s", jsonString(retries))
		}
		if s, _ := res["result"].(string); !strings.HasPrefix(s, "API Error: 529 Overloaded.") || res["api_error_type"] != "overloaded_error" {
			t.Errorf("result %s", jsonString(res))
		}
		t.Logf("529 result: %q", res["result"])
	})
}

// TestClaudeMCPTools: Conch's MCP server can offer the model its own tools
// (mcp__conch__report_result); the permission prompt tool itself is hidden
// from the model. By default MCP tools are deferred behind ToolSearch;
// ENABLE_TOOL_SEARCH=false offers them with their schema up front.
func TestClaudeMCPTools(t *testing.T) {
	report := map[string]any{"summary": "all good", "ok": true}
	t.Run("deferred", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "mcp__conch__report_result", args: report, answer: allow})
		turn := p.srv.Turns()[0]
		for _, name := range turn.Tools {
			if strings.HasPrefix(name, "mcp__") {
				t.Errorf("MCP tool %s offered up front", name)
			}
		}
		if !strings.Contains(turn.System, "\nmcp__conch__report_result\n") {
			t.Errorf("the deferred tool list does not name mcp__conch__report_result")
		}
		init := p.r.linesOf("system", "init")[0]
		tools := jsonString(init["tools"])
		if !strings.Contains(tools, `"mcp__conch__report_result"`) || strings.Contains(tools, "approve") {
			t.Errorf("init tools %s", tools)
		}
		if jsonString(init["mcp_servers"]) != `[{"name":"conch","source":"dynamic","status":"connected"}]` {
			t.Errorf("init mcp_servers %s", jsonString(init["mcp_servers"]))
		}
		// Called directly anyway, it runs (after the permission tool).
		if calls := p.mcp.calls_(); len(calls) != 2 || calls[0].Name != "approve" || calls[1].Name != "report_result" {
			t.Errorf("MCP calls %+v", calls)
		}
	})
	t.Run("eager", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "mcp__conch__report_result", args: report, answer: allow,
			env: []string{"ENABLE_TOOL_SEARCH=false"}})
		turn := p.srv.Turns()[0]
		if !strings.Contains(strings.Join(turn.Tools, ","), "mcp__conch__report_result") || strings.Contains(strings.Join(turn.Tools, ","), "approve") {
			t.Errorf("tools offered %v", turn.Tools)
		}
		var body struct {
			Tools []map[string]any `json:"tools"`
		}
		json.Unmarshal(p.srv.Requests()[0].Body, &body)
		for _, tool := range body.Tools {
			if tool["name"] == "mcp__conch__report_result" {
				t.Logf("as offered to the model: %s", jsonString(tool))
			}
		}
		calls := p.mcp.calls_()
		if len(calls) != 2 || calls[0].Name != "approve" || calls[1].Name != "report_result" {
			t.Fatalf("MCP calls %+v", calls)
		}
		var req map[string]any
		json.Unmarshal(calls[0].Args, &req)
		if req["tool_name"] != "mcp__conch__report_result" || jsonString(req["input"]) != jsonString(report) {
			t.Errorf("permission request %s", calls[0].Args)
		}
		if jsonString(json.RawMessage(calls[1].Args)) != jsonString(report) {
			t.Errorf("report_result args %s", calls[1].Args)
		}
		text, isErr, _ := p.result(t)
		if isErr || text != "recorded" {
			t.Errorf("tool result %q %v", text, isErr)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		p := runPermission(t, permCase{mode: "default", call: "mcp__conch__report_result", args: report,
			answer: `{"behavior":"deny","message":"must not be asked"}`, flags: []string{"--allowedTools", "mcp__conch__report_result"}})
		if calls := p.mcp.calls_(); len(calls) != 1 || calls[0].Name != "report_result" {
			t.Errorf("MCP calls %+v", calls)
		}
	})
}

// TestClaudePermissionToolTimeout (CONCH_CLAUDE_SLOW=1, about 3 minutes):
// the CLI gives up on a permission tool call over HTTP after 60s ("The
// operation timed out."), unless MCP_TOOL_TIMEOUT is raised or the answer
// streams progress notifications.
func TestClaudePermissionToolTimeout(t *testing.T) {
	if os.Getenv("CONCH_CLAUDE_SLOW") == "" {
		t.Skip("slow (70s per case): set CONCH_CLAUDE_SLOW=1")
	}
	for _, c := range []struct {
		name     string
		env      []string
		progress time.Duration
		ok       bool
	}{
		{"default", nil, 0, false},
		{"MCP_TOOL_TIMEOUT", []string{"MCP_TOOL_TIMEOUT=600000"}, 0, true},
		{"progress", nil, 10 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "hello.txt")
			srv := New(t, writeBrain(path, "hi\n"))
			mcp := newMCPServer(t, permissionTools, func(string, json.RawMessage) mcpResult {
				time.Sleep(70 * time.Second)
				return mcpResult{Text: allow}
			})
			mcp.progress = c.progress
			r := startClaude(t, srv, runOpts{dir: dir, env: c.env, args: []string{"--mcp-config", mcp.config(t, "conch"),
				"--strict-mcp-config", "--permission-prompt-tool", "mcp__conch__approve"}})
			r.send("Create hello.txt.")
			_, res := r.result(0, 150*time.Second)
			r.finish(20 * time.Second)
			_, err := os.Stat(path)
			if (err == nil) != c.ok {
				t.Errorf("file written %v, want %v; result %q", err == nil, c.ok, res["result"])
			}
			for _, tr := range r.toolResults() {
				t.Logf("tool result: %q", contentText(tr["content"]))
			}
		})
	}
}
