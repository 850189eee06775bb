//go:build unix

package gemini

import (
	"bufio"
	"conch/backend/testrig/agentbin"
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
)

// This file is the tests' ACP client: it runs `gemini --acp` isolated
// against a Server and speaks newline-delimited JSON-RPC 2.0 on its stdio.

// geminiBinary is the Gemini CLI to run: $CONCH_GEMINI, else the pinned
// one scripts/setup installs (see agentbin).
func geminiBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CONCH_GEMINI"); bin != "" {
		return bin
	}
	return agentbin.Path(t, agentbin.Gemini)
}

// testModel is the model the tests name with -m: a fixed, non-"auto"
// model has a single-model fallback chain, so retries and errors are
// not rerouted to other models.
const testModel = "gemini-2.5-flash"

// baseSettings is ~/.gemini/settings.json for an isolated run: no usage
// statistics (Clearcut), no telemetry, no update check, no IDE, and one
// attempt per model call so that error answers come back at once.
func baseSettings() map[string]any {
	return map[string]any{
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general": map[string]any{
			"enableAutoUpdate":             false,
			"enableAutoUpdateNotification": false,
			"maxAttempts":                  1,
		},
		"ide":     map[string]any{"enabled": false},
		"ui":      map[string]any{"hideTips": true, "hideBanner": true},
		"context": map[string]any{"includeDirectoryTree": false},
	}
}

// geminiEnv is the environment that runs the CLI isolated against url:
// a fresh HOME, an API key, and its base URL pointed at the server.
func geminiEnv(home, url string) []string {
	return []string{
		"HOME=" + home,
		"GEMINI_CLI_HOME=" + home,
		"PATH=" + filepath.Dir(mustLookPath("node")) + ":/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"GEMINI_API_KEY=test",
		"GOOGLE_GEMINI_BASE_URL=" + url,
		"GEMINI_TELEMETRY_ENABLED=false",
	}
}

func mustLookPath(name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		return "/usr/bin/" + name
	}
	return p
}

// writeHome makes a fresh HOME with ~/.gemini/settings.json.
func writeHome(t *testing.T, settings map[string]any) string {
	t.Helper()
	home := t.TempDir()
	for _, d := range []string{"tmp", ".gemini"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// rpcMsg is one JSON-RPC message in either direction.
type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("rpc error %d: %s %s", e.Code, e.Message, e.Data)
}

// logLine is one line of the transcript: ">" sent to the agent, "<" from it.
type logLine struct {
	Dir  string
	At   time.Duration
	Line string
	Msg  rpcMsg
}

// acpRun is one running `gemini --acp`.
type acpRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dir   string
	home  string
	start time.Time

	// onRequest answers the agent's requests (session/request_permission,
	// fs/*); nil answers "method not found".
	onRequest func(method string, params json.RawMessage) (any, *rpcError)

	mu      sync.Mutex
	nextID  int
	log     []logLine
	pending map[string]chan rpcMsg
	stderr  strings.Builder
	more    chan struct{}
	done    chan struct{}
	exitErr error
}

type acpOpts struct {
	args     []string       // after --acp
	env      []string       // on top of geminiEnv
	dir      string         // working directory; a temp dir when empty
	home     string         // HOME; a fresh one with settings when empty
	settings map[string]any // settings.json; baseSettings() when nil
	noTrust  bool           // leave out --skip-trust
	noModel  bool           // leave out -m testModel
	wrap     []string       // a command line to run the CLI under (e.g. strace)
}

// startACP starts `gemini --acp --skip-trust -m testModel` in its own
// process group; it is killed with that group at the end of the test.
func startACP(t *testing.T, srv *Server, o acpOpts) *acpRun {
	t.Helper()
	bin := geminiBinary(t)
	home := o.home
	if home == "" {
		s := o.settings
		if s == nil {
			s = baseSettings()
		}
		home = writeHome(t, s)
	}
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	args := []string{"--acp"}
	if !o.noTrust {
		args = append(args, "--skip-trust")
	}
	if !o.noModel {
		args = append(args, "-m", testModel)
	}
	args = append(args, o.args...)
	cmd := exec.Command(bin, args...)
	if len(o.wrap) > 0 {
		cmd = exec.Command(o.wrap[0], append(append(o.wrap[1:], bin), args...)...)
	}
	cmd.Dir = dir
	url := "http://127.0.0.1:1" // nothing listens there
	if srv != nil {
		url = srv.URL
	}
	cmd.Env = append(geminiEnv(home, url), o.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r := &acpRun{t: t, cmd: cmd, dir: dir, home: home, pending: map[string]chan rpcMsg{},
		more: make(chan struct{}, 1), done: make(chan struct{})}
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
	r.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("started gemini pid %d: %s", cmd.Process.Pid, strings.Join(args, " "))
	go r.read(stdout)
	t.Cleanup(func() {
		r.kill()
		if os.Getenv("CONCH_GEMINI_DUMP") != "" {
			t.Logf("transcript:\n%s\nstderr:\n%s", r.transcript(), r.stderrText())
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

func (r *acpRun) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		var m rpcMsg
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			r.t.Logf("gemini stdout, not JSON: %q", line)
		}
		r.mu.Lock()
		r.log = append(r.log, logLine{Dir: "<", At: time.Since(r.start), Line: line, Msg: m})
		var ch chan rpcMsg
		if m.Method == "" && len(m.ID) > 0 {
			ch = r.pending[string(m.ID)]
			delete(r.pending, string(m.ID))
		}
		handler := r.onRequest
		r.mu.Unlock()
		select {
		case r.more <- struct{}{}:
		default:
		}
		switch {
		case ch != nil:
			ch <- m
		case m.Method != "" && len(m.ID) > 0:
			// a request from the agent: answer it off the read loop
			go func(m rpcMsg) {
				var result any
				var rerr *rpcError
				if handler != nil {
					result, rerr = handler(m.Method, m.Params)
				} else {
					rerr = &rpcError{Code: -32601, Message: "method not found: " + m.Method}
				}
				out := map[string]any{"jsonrpc": "2.0", "id": m.ID}
				if rerr != nil {
					out["error"] = rerr
				} else {
					out["result"] = result
				}
				r.write(out)
			}(m)
		}
	}
	err := r.cmd.Wait()
	r.mu.Lock()
	r.exitErr = err
	for id, ch := range r.pending {
		close(ch)
		delete(r.pending, id)
	}
	r.mu.Unlock()
	close(r.done)
}

func (r *acpRun) write(v any) {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	var m rpcMsg
	json.Unmarshal(b, &m)
	r.log = append(r.log, logLine{Dir: ">", At: time.Since(r.start), Line: string(b), Msg: m})
	r.mu.Unlock()
	if _, err := r.stdin.Write(append(b, '\n')); err != nil {
		r.t.Logf("write to gemini stdin: %v", err)
	}
}

// send sends a request and gives a channel for its response.
func (r *acpRun) send(method string, params any) chan rpcMsg {
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	ch := make(chan rpcMsg, 1)
	r.pending[fmt.Sprint(id)] = ch
	r.mu.Unlock()
	r.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return ch
}

// await waits for a response sent by send.
func (r *acpRun) await(ch chan rpcMsg, timeout time.Duration, what string) rpcMsg {
	r.t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			r.t.Fatalf("gemini ended (%v) before answering %s\ntranscript:\n%s\nstderr:\n%s", r.exitErr, what, r.transcript(), r.stderrText())
		}
		return m
	case <-time.After(timeout):
		r.t.Fatalf("no answer to %s within %v\ntranscript:\n%s\nstderr:\n%s", what, timeout, r.transcript(), r.stderrText())
	}
	return rpcMsg{}
}

// call sends a request and waits for its response.
func (r *acpRun) call(method string, params any, timeout time.Duration) rpcMsg {
	r.t.Helper()
	return r.await(r.send(method, params), timeout, method)
}

// notify sends a notification.
func (r *acpRun) notify(method string, params any) {
	r.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// waitFor waits for the first message from the agent, at log index from
// or later, that pred accepts, and gives its log index.
func (r *acpRun) waitFor(from int, timeout time.Duration, what string, pred func(rpcMsg) bool) (int, rpcMsg) {
	r.t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		for i := from; i < len(r.log); i++ {
			if r.log[i].Dir == "<" && pred(r.log[i].Msg) {
				m := r.log[i].Msg
				r.mu.Unlock()
				return i, m
			}
		}
		r.mu.Unlock()
		select {
		case <-r.more:
		case <-r.done:
			r.mu.Lock()
			for i := from; i < len(r.log); i++ {
				if r.log[i].Dir == "<" && pred(r.log[i].Msg) {
					m := r.log[i].Msg
					r.mu.Unlock()
					return i, m
				}
			}
			r.mu.Unlock()
			r.t.Fatalf("gemini ended (%v) before %s\ntranscript:\n%s\nstderr:\n%s", r.exitErr, what, r.transcript(), r.stderrText())
		case <-deadline:
			r.t.Fatalf("no %s within %v\ntranscript:\n%s\nstderr:\n%s", what, timeout, r.transcript(), r.stderrText())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *acpRun) logLen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.log)
}

// messages are the agent's messages from log index from on.
func (r *acpRun) messages(from int) []rpcMsg {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []rpcMsg
	for i := from; i < len(r.log); i++ {
		if r.log[i].Dir == "<" {
			out = append(out, r.log[i].Msg)
		}
	}
	return out
}

func (r *acpRun) transcript() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, l := range r.log {
		fmt.Fprintf(&b, "%s %6.2fs %s\n", l.Dir, l.At.Seconds(), l.Line)
	}
	return b.String()
}

func (r *acpRun) stderrText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// exited reports whether the CLI has ended, waiting up to timeout.
func (r *acpRun) exited(timeout time.Duration) bool {
	select {
	case <-r.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// kill ends the CLI and everything in its process group, and waits.
func (r *acpRun) kill() {
	if r.cmd.Process == nil {
		return
	}
	syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	r.cmd.Process.Kill()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.t.Errorf("gemini pid %d did not end after SIGKILL", r.cmd.Process.Pid)
	}
}

// The ACP steps every test makes.

func (r *acpRun) initialize(caps map[string]any) rpcMsg {
	r.t.Helper()
	if caps == nil {
		caps = map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false}
	}
	m := r.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps,
		"clientInfo": map[string]any{"name": "conch-test", "version": "0.0.1"}}, 60*time.Second)
	if m.Error != nil {
		r.t.Fatalf("initialize: %v", m.Error)
	}
	return m
}

func (r *acpRun) newSession(mcpServers []any) string {
	r.t.Helper()
	if mcpServers == nil {
		mcpServers = []any{}
	}
	m := r.call("session/new", map[string]any{"cwd": r.dir, "mcpServers": mcpServers}, 60*time.Second)
	if m.Error != nil {
		r.t.Fatalf("session/new: %v", m.Error)
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(m.Result, &res)
	if res.SessionID == "" {
		r.t.Fatalf("session/new gave no sessionId: %s", m.Result)
	}
	return res.SessionID
}

func textPrompt(session, text string) map[string]any {
	return map[string]any{"sessionId": session, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// update is the params.update of a session/update notification.
type update struct {
	SessionUpdate string          `json:"sessionUpdate"`
	Content       json.RawMessage `json:"content"`
	ToolCallID    string          `json:"toolCallId"`
	Status        string          `json:"status"`
	Title         string          `json:"title"`
	Kind          string          `json:"kind"`
}

func updates(ms []rpcMsg) []update {
	var out []update
	for _, m := range ms {
		if m.Method != "session/update" {
			continue
		}
		var p struct {
			Update update `json:"update"`
		}
		json.Unmarshal(m.Params, &p)
		out = append(out, p.Update)
	}
	return out
}

// chunkText joins the text of the updates of kind kind.
func chunkText(us []update, kind string) (string, int) {
	var b strings.Builder
	n := 0
	for _, u := range us {
		if u.SessionUpdate != kind {
			continue
		}
		var c struct {
			Text string `json:"text"`
		}
		json.Unmarshal(u.Content, &c)
		b.WriteString(c.Text)
		n++
	}
	return b.String(), n
}

func isUpdate(kind string) func(rpcMsg) bool {
	return func(m rpcMsg) bool {
		if m.Method != "session/update" {
			return false
		}
		var p struct {
			Update update `json:"update"`
		}
		json.Unmarshal(m.Params, &p)
		return p.Update.SessionUpdate == kind
	}
}

// dump writes the transcript and the server's request bodies under
// $CONCH_GEMINI_DUMPDIR, for the docs.
func dump(t *testing.T, r *acpRun, srv *Server) {
	dir := os.Getenv("CONCH_GEMINI_DUMPDIR")
	if dir == "" {
		return
	}
	name := strings.ReplaceAll(t.Name(), "/", "_")
	os.MkdirAll(dir, 0o755)
	if r != nil {
		os.WriteFile(filepath.Join(dir, name+".acp.txt"), []byte(r.transcript()+"\n--- stderr\n"+r.stderrText()), 0o644)
	}
	if srv != nil {
		for i, q := range srv.Requests() {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.req%02d.%s.json", name, i, q.Action)), q.Body, 0o644)
		}
		os.WriteFile(filepath.Join(dir, name+".paths.txt"), []byte(strings.Join(srv.Paths(), "\n")+"\n"), 0o644)
	}
}
