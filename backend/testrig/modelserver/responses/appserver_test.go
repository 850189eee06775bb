//go:build unix

package responses

// A small client of `codex app-server` (JSON-RPC 2.0 over stdio, one
// JSON object per line) for the tests that run the real Codex CLI.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conch/backend/testrig/agentbin"
	"conch/backend/testrig/modelserver"
)

// codexBin is the codex binary to test: $CONCH_CODEX, else the pinned
// one scripts/setup installs (see agentbin).
func codexBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CONCH_CODEX"); bin != "" {
		return bin
	}
	return agentbin.Path(t, agentbin.Codex)
}

// testKeyEnv is the env_key of the test provider.
const testKeyEnv = "CONCH_TEST_KEY"

// noRetries are the provider settings that turn Codex's retries off.
const noRetries = "request_max_retries = 0\nstream_max_retries = 0\n"

// codexConfig is config.toml for a CODEX_HOME that talks only to base
// (the scripted server); retries are the provider's retry settings and
// extra is appended.
func codexConfig(base, retries, extra string) string {
	return CodexConfig(base, testKeyEnv, retries) + extra
}

// blackhole is an HTTP(S) proxy that refuses everything and records what
// was asked, so that any attempt to reach the internet is seen.
type blackhole struct {
	ln   net.Listener
	mu   sync.Mutex
	seen []string
}

func newBlackhole(t *testing.T) *blackhole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.seen = append(b.seen, r.Method+" "+r.Host+r.URL.Path)
		b.mu.Unlock()
		http.Error(w, "no internet in tests", http.StatusForbidden)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

func (b *blackhole) URL() string { return "http://" + b.ln.Addr().String() }

func (b *blackhole) Seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

// msg is one JSON-RPC message in either direction.
type msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// appServer is a running `codex app-server`.
type appServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	home   string
	stderr *bytes.Buffer

	mu       sync.Mutex
	nextID   int
	pending  map[string]chan msg
	incoming []msg // notifications and server requests, in order
	cursor   int   // incoming[:cursor] were consumed by expect
	wake     chan struct{}
	log      []string // every line, prefixed "> " (to codex) or "< "
	done     chan struct{}
}

type options struct {
	config  string            // extra config.toml text
	retries *string           // provider retry settings; nil is noRetries
	env     map[string]string // extra environment
	args    []string          // extra app-server arguments
}

// startCodex runs `codex app-server` in a fresh CODEX_HOME pointed at
// base, with HOME in a temp dir and all proxies set to a blackhole.
func startCodex(t *testing.T, base string, o options) *appServer {
	t.Helper()
	bin := codexBin(t)
	root := t.TempDir()
	home := filepath.Join(root, "codex-home")
	userHome := filepath.Join(root, "home")
	// TMPDIR must not hold CODEX_HOME, or codex refuses to make its
	// helper aliases (apply_patch, codex-linux-sandbox) on PATH.
	tmp := filepath.Join(root, "tmp")
	for _, d := range []string{home, userHome, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	retries := noRetries
	if o.retries != nil {
		retries = *o.retries
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(codexConfig(base, retries, o.config)), 0o644); err != nil {
		t.Fatal(err)
	}
	bh := newBlackhole(t)
	t.Cleanup(func() {
		if seen := bh.Seen(); len(seen) > 0 {
			t.Errorf("codex tried to reach beyond loopback: %q", seen)
		}
	})
	env := map[string]string{
		"PATH":         os.Getenv("PATH"),
		"HOME":         userHome,
		"TMPDIR":       tmp,
		"CODEX_HOME":   home,
		testKeyEnv:     "sk-conch-test",
		"LANG":         "C.UTF-8",
		"HTTP_PROXY":   bh.URL(),
		"HTTPS_PROXY":  bh.URL(),
		"ALL_PROXY":    bh.URL(),
		"http_proxy":   bh.URL(),
		"https_proxy":  bh.URL(),
		"all_proxy":    bh.URL(),
		"NO_PROXY":     "127.0.0.1,localhost",
		"no_proxy":     "127.0.0.1,localhost",
		"RUST_LOG":     "warn",
		"CONCH_MARKER": "conch-marker-" + t.Name(),
	}
	for k, v := range o.env {
		env[k] = v
	}
	args := append([]string{"app-server"}, o.args...)
	cmd := exec.Command(bin, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = root
	// Its own process group, so that cleanup can end everything it left.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &appServer{
		t: t, cmd: cmd, stdin: stdin, home: home, stderr: &bytes.Buffer{},
		pending: map[string]chan msg{}, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	cmd.Stderr = &lockedWriter{mu: &a.mu, w: a.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go a.read(stdout)
	t.Cleanup(a.stop)
	return a
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (a *appServer) read(r io.Reader) {
	defer close(a.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		var m msg
		if err := json.Unmarshal(line, &m); err != nil {
			a.mu.Lock()
			a.log = append(a.log, "< (not json) "+string(line))
			a.mu.Unlock()
			continue
		}
		a.mu.Lock()
		a.log = append(a.log, "< "+string(line))
		if m.Method == "" && m.ID != nil { // a response
			ch := a.pending[string(m.ID)]
			delete(a.pending, string(m.ID))
			a.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		a.incoming = append(a.incoming, m)
		a.mu.Unlock()
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

func (a *appServer) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		a.t.Fatal(err)
	}
	a.mu.Lock()
	a.log = append(a.log, "> "+string(b))
	a.mu.Unlock()
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		a.t.Errorf("write to codex: %v", err)
	}
}

// call sends a request and waits for its response.
func (a *appServer) call(method string, params any, timeout time.Duration) (json.RawMessage, *rpcError) {
	a.t.Helper()
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	ch := make(chan msg, 1)
	a.pending[fmt.Sprint(id)] = ch
	a.mu.Unlock()
	a.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	select {
	case m := <-ch:
		return m.Result, m.Error
	case <-a.done:
		a.t.Fatalf("codex exited while waiting for %s: %s", method, a.stderrText())
	case <-time.After(timeout):
		a.t.Fatalf("no response to %s in %s", method, timeout)
	}
	return nil, nil
}

// mustCall is call that fails the test on an error.
func (a *appServer) mustCall(method string, params any, timeout time.Duration) json.RawMessage {
	a.t.Helper()
	res, err := a.call(method, params, timeout)
	if err != nil {
		a.t.Fatalf("%s: %v", method, err)
	}
	return res
}

func (a *appServer) notify(method string, params any) {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	a.write(m)
}

// respond answers a server request.
func (a *appServer) respond(id json.RawMessage, result any) {
	a.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// expect waits for the next incoming message (after those consumed) for
// which match is true, consuming everything up to it.
func (a *appServer) expect(what string, timeout time.Duration, match func(msg) bool) msg {
	a.t.Helper()
	deadline := time.After(timeout)
	for {
		a.mu.Lock()
		for a.cursor < len(a.incoming) {
			m := a.incoming[a.cursor]
			a.cursor++
			if match(m) {
				a.mu.Unlock()
				return m
			}
		}
		a.mu.Unlock()
		select {
		case <-a.wake:
		case <-a.done:
			// Drain what was read before the exit.
			a.mu.Lock()
			left := a.cursor < len(a.incoming)
			a.mu.Unlock()
			if !left {
				a.t.Fatalf("codex exited while waiting for %s: %s", what, a.stderrText())
			}
		case <-deadline:
			a.t.Fatalf("no %s in %s; last messages:\n%s", what, timeout, a.tail(15))
		}
	}
}

// expectMethod waits for the next message of method.
func (a *appServer) expectMethod(method string, timeout time.Duration) msg {
	a.t.Helper()
	return a.expect(method, timeout, func(m msg) bool { return m.Method == method })
}

// since are the incoming messages from index i on.
func (a *appServer) since(i int) []msg {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]msg(nil), a.incoming[i:]...)
}

func (a *appServer) mark() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cursor
}

func (a *appServer) tail(n int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.log
	if len(l) > n {
		l = l[len(l)-n:]
	}
	var out []string
	for _, s := range l {
		if len(s) > 600 {
			s = s[:600] + "…"
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

func (a *appServer) stderrText() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stderr.String()
}

// stop ends the app-server and its process group, and saves the
// transcript under $CONCH_CODEX_CAPTURE when that is set.
func (a *appServer) stop() {
	a.stdin.Close()
	if a.cmd.Process != nil {
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		a.cmd.Wait()
	}
	<-a.done
	if dir := os.Getenv("CONCH_CODEX_CAPTURE"); dir != "" {
		os.MkdirAll(dir, 0o755)
		a.mu.Lock()
		text := strings.Join(a.log, "\n") + "\n"
		errText := a.stderr.String()
		a.mu.Unlock()
		name := strings.ReplaceAll(a.t.Name(), "/", "_")
		os.WriteFile(filepath.Join(dir, name+".jsonl"), []byte(text), 0o644)
		os.WriteFile(filepath.Join(dir, name+".stderr"), []byte(errText), 0o644)
	}
}

// handshake sends initialize and the initialized notification.
func (a *appServer) handshake() json.RawMessage {
	a.t.Helper()
	res := a.mustCall("initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "conch", "title": "Conch", "version": "0.0.0-test"},
		"capabilities": map[string]any{"experimentalApi": false, "requestAttestation": false},
	}, 30*time.Second)
	a.notify("initialized", nil)
	return res
}

// startThread sends thread/start and returns the thread id.
func (a *appServer) startThread(params map[string]any) (string, json.RawMessage) {
	a.t.Helper()
	res := a.mustCall("thread/start", params, 60*time.Second)
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Thread.ID == "" {
		a.t.Fatalf("thread/start result without thread.id: %s", res)
	}
	return r.Thread.ID, res
}

// startTurn sends turn/start with a text input and returns the turn id.
func (a *appServer) startTurn(thread, text string, extra map[string]any) string {
	a.t.Helper()
	params := map[string]any{
		"threadId": thread,
		"input":    []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}},
	}
	for k, v := range extra {
		params[k] = v
	}
	res := a.mustCall("turn/start", params, 60*time.Second)
	var r struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Turn.ID == "" {
		a.t.Fatalf("turn/start result without turn.id: %s", res)
	}
	return r.Turn.ID
}

// withTimeout is a context for a bounded step.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// field reads a dotted path of a JSON object, "" when missing.
func field(raw json.RawMessage, path string) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// newServer is New that also saves the requests it got under
// $CONCH_CODEX_CAPTURE (TestName.requests.jsonl) when that is set.
func newServer(t *testing.T, brain modelserver.Brain) *Server {
	s := New(t, brain)
	if dir := os.Getenv("CONCH_CODEX_CAPTURE"); dir != "" {
		t.Cleanup(func() {
			var b bytes.Buffer
			for _, r := range s.Requests() {
				fmt.Fprintf(&b, "%s %s -> %d\n%s\n", r.Method, r.Path, r.Status, r.Body)
			}
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".requests"), b.Bytes(), 0o644)
		})
	}
	return s
}
