package agentcli

import (
	"bytes"
	"conch/backend/provider"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// askTest is a running askServer and a client of its own.
type askTest struct {
	t      *testing.T
	s      *askServer
	client *http.Client
}

func newAskTest(t *testing.T, ask askFunc) *askTest {
	return newAskTestBeat(t, ask, time.Minute)
}

func newAskTestBeat(t *testing.T, ask askFunc, beat time.Duration) *askTest {
	t.Helper()
	s, err := startAskServer(context.Background(), serveOpts{Ask: ask, Cwd: "/home/me/project", Beat: beat})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		s.Close()
		tr.CloseIdleConnections()
	})
	return &askTest{t: t, s: s, client: &http.Client{Transport: tr, Timeout: 5 * time.Second}}
}

// do sends a request to the server's address with the given Host, path
// and method; it returns the status and the body.
func (a *askTest) do(host, method, path, body string, header ...string) (int, string) {
	a.t.Helper()
	req, err := http.NewRequest(method, "http://"+a.s.addr+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// post sends a JSON-RPC body the way Claude Code does.
func (a *askTest) post(body string) (int, string) {
	a.t.Helper()
	return a.do(a.s.addr, http.MethodPost, a.s.path, body)
}

func never(context.Context, provider.Action) (bool, error) {
	return false, errors.New("nobody should be asked")
}

func TestAskServerConfig(t *testing.T) {
	t.Parallel()
	a := newAskTest(t, never)
	st, err := os.Stat(a.s.config)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v", st.Mode().Perm())
	}
	b, _ := os.ReadFile(a.s.config)
	if want := `{"mcpServers":{"conch":{"timeout":86400000,"type":"http","url":"http://` + a.s.addr + a.s.path + `"}}}`; string(b) != want {
		t.Errorf("config %s, want %s", b, want)
	}
	if !strings.HasPrefix(a.s.addr, "127.0.0.1:") || len(a.s.path) != len("/mcp/")+32 {
		t.Errorf("addr %s path %s", a.s.addr, a.s.path)
	}
	other := newAskTest(t, never)
	if other.s.path == a.s.path {
		t.Error("two servers share a token")
	}
}

func TestAskServerRejects(t *testing.T) {
	t.Parallel()
	a := newAskTest(t, never)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	_, port, _ := net.SplitHostPort(a.s.addr)
	for _, c := range []struct {
		name, host, method, path string
		header                   []string
		want                     int
	}{
		{"wrong token", a.s.addr, "POST", "/mcp/" + strings.Repeat("0", 32), nil, 404},
		{"token prefix", a.s.addr, "POST", a.s.path[:len(a.s.path)-1], nil, 404},
		{"token and more", a.s.addr, "POST", a.s.path + "/x", nil, 404},
		{"no token", a.s.addr, "POST", "/mcp/", nil, 404},
		{"root", a.s.addr, "POST", "/", nil, 404},
		{"query", a.s.addr, "POST", a.s.path + "?x=1", nil, 404},
		{"get", a.s.addr, "GET", a.s.path, nil, 405},
		{"delete", a.s.addr, "DELETE", a.s.path, nil, 405},
		{"rebound host", "evil.example:" + port, "POST", a.s.path, nil, 403},
		{"other port", "127.0.0.1:1", "POST", a.s.path, nil, 403},
		{"foreign origin", a.s.addr, "POST", a.s.path, []string{"Origin", "http://evil.example"}, 403},
		{"own origin", a.s.addr, "POST", a.s.path, []string{"Origin", "http://" + a.s.addr}, 200},
		{"localhost", "localhost:" + port, "POST", a.s.path, nil, 200},
	} {
		status, body := a.do(c.host, c.method, c.path, ping, c.header...)
		if status != c.want {
			t.Errorf("%s: status %d, want %d: %s", c.name, status, c.want, body)
		}
		if c.want != 200 && strings.Contains(body, "jsonrpc") {
			t.Errorf("%s: a refused request got an answer: %s", c.name, body)
		}
	}
}

func TestAskServerMessages(t *testing.T) {
	t.Parallel()
	a := newAskTest(t, func(ctx context.Context, a provider.Action) (bool, error) {
		return a.Effect == "command", nil
	})
	for _, c := range []struct {
		name, body string
		status     int
		want       string // the reply, exactly; "" for none
	}{
		{"initialize", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"claude-code","version":"2"}}}`,
			200, `{"jsonrpc":"2.0","id":0,"result":{"capabilities":{"tools":{}},"protocolVersion":"2025-03-26","serverInfo":{"name":"conch","version":"1"}}}`},
		{"initialize unknown version", `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"1999-01-01"}}`,
			200, `{"jsonrpc":"2.0","id":"i","result":{"capabilities":{"tools":{}},"protocolVersion":"2025-06-18","serverInfo":{"name":"conch","version":"1"}}}`},
		{"initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202, ""},
		{"other notification", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{}}`, 202, ""},
		{"cancel of nothing", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, 202, ""},
		{"a response", `{"jsonrpc":"2.0","id":5,"result":{}}`, 202, ""},
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 200, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"tools/list", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
			200, `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"description":"Asks the person in Conch whether Claude may use a tool.","inputSchema":{"properties":{"input":{"type":"object"},"tool_name":{"type":"string"},"tool_use_id":{"type":"string"}},"required":["tool_name","input"],"type":"object"},"name":"approve"}]}}`},
		{"allow", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":{"command":"ls"},"tool_use_id":"t1"}}}`,
			200, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"{\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"ls\"}}","type":"text"}]}}`},
		{"deny", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Write","input":{"file_path":"/home/me/project/a.go"}}}}`,
			200, `{"jsonrpc":"2.0","id":4,"result":{"content":[{"text":"{\"behavior\":\"deny\",\"message\":\"The person declined.\"}","type":"text"}]}}`},
		{"no input", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash"}}}`,
			200, `{"jsonrpc":"2.0","id":5,"result":{"content":[{"text":"{\"behavior\":\"allow\",\"updatedInput\":{}}","type":"text"}]}}`},

		{"not json", `{"jsonrpc":`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{"empty", ``, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{"not an object", `"ping"`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batches are not supported"}}`},
		{"old jsonrpc", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, 400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"jsonrpc must be \"2.0\""}}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"id must be a string or a number"}}`},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"id must be a string or a number"}}`},
		{"no method", `{"jsonrpc":"2.0","id":1}`, 400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no method"}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"resources/list"}`, 200, `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"method not found: resources/list"}}`},
		{"unknown tool", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rm","arguments":{}}}`, 200, `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool: rm"}}`},
		{"params not an object", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":[1]}`, 200, `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"tools/call takes name and arguments"}}`},
		{"input not an object", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":[1]}}}`, 200, `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"approve takes tool_name and an input object"}}`},
		{"no tool_name", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"approve","arguments":{"input":{}}}}`, 200, `{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"approve takes tool_name and an input object"}}`},
	} {
		status, body := a.post(c.body)
		if status != c.status || body != c.want {
			t.Errorf("%s:\n got %d %s\nwant %d %s", c.name, status, body, c.status, c.want)
		}
	}
}

// The person sees the question in Conch's words: the command for Bash,
// the file for an edit, relative to the chat's folder.
func TestAskServerDetail(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	a := newAskTest(t, func(ctx context.Context, a provider.Action) (bool, error) {
		mu.Lock()
		got = append(got, a.Tool+" ("+a.Effect+"): "+a.Detail)
		mu.Unlock()
		return true, nil
	})
	for args, want := range map[string]string{
		`{"tool_name":"Bash","input":{"command":"go test ./...","description":"Run the tests"}}`:                  "Bash (command): Run `go test ./...` in /home/me/project?",
		`{"tool_name":"Edit","input":{"file_path":"/home/me/project/main.go","old_string":"a","new_string":"b"}}`: "Edit (edit): Edit main.go?",
		`{"tool_name":"Write","input":{"file_path":"/etc/hosts","content":"x"}}`:                                  "Write (edit): Write /etc/hosts?",
		`{"tool_name":"WebFetch","input":{"url":"https://example.com","prompt":"read"}}`:                          "WebFetch (network): Fetch https://example.com?",
	} {
		got = nil
		status, body := a.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"approve","arguments":` + args + `}}`)
		if status != 200 || !strings.Contains(body, `\"behavior\":\"allow\"`) {
			t.Errorf("%s: %d %s", args, status, body)
		}
		mu.Lock()
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: asked %q, want %q", args, got, want)
		}
		mu.Unlock()
	}
}

// An answer slow to come keeps the response alive with spaces before
// the JSON; the reply is the same.
func TestAskServerKeepsSlowAnswersAlive(t *testing.T) {
	t.Parallel()
	a := newAskTestBeat(t, func(ctx context.Context, a provider.Action) (bool, error) {
		time.Sleep(120 * time.Millisecond)
		return true, nil
	}, 20*time.Millisecond)
	req, _ := http.NewRequest("POST", a.s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":{"command":"ls"}}}}`))
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("headers came after %v", took)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	if !strings.HasPrefix(body, "  ") {
		t.Errorf("no keep-alive spaces: %q", body)
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"{\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"ls\"}}","type":"text"}]}}`; strings.TrimLeft(body, " ") != want {
		t.Errorf("body %q, want spaces then %s", body, want)
	}
	if status, body := a.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); status != 200 || body != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Errorf("a quick answer: %d %q", status, body)
	}
}

// Closing the server cancels the pending ask, ends every goroutine it
// started, frees the port and removes the config file.
// A client that takes an SSE answer and gave a progress token gets a
// progress notification every beat while the person thinks, then the
// reply: Claude Code gives up on a call that sends nothing for 60 s.
func TestAskServerStreamsProgressWhileItWaits(t *testing.T) {
	t.Parallel()
	a := newAskTestBeat(t, func(ctx context.Context, a provider.Action) (bool, error) {
		time.Sleep(150 * time.Millisecond)
		return false, nil
	}, 20*time.Millisecond)
	req, _ := http.NewRequest("POST", a.s.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":{"command":"ls"}},"_meta":{"progressToken":"p-1"}}}`))
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	b, _ := io.ReadAll(resp.Body)
	events := strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n")
	if len(events) < 3 {
		t.Fatalf("want progress notes then the reply, got %q", b)
	}
	for i, ev := range events[:len(events)-1] {
		want := fmt.Sprintf(`event: message`+"\n"+`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"message":"Waiting for the person in Conch","progress":%d,"progressToken":"p-1"}}`, i+1)
		if ev != want {
			t.Errorf("event %d: %q, want %q", i, ev, want)
		}
	}
	if last, want := events[len(events)-1], "event: message\ndata: "+`{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"{\"behavior\":\"deny\",\"message\":\"The person declined.\"}","type":"text"}]}}`; last != want {
		t.Errorf("reply %q, want %q", last, want)
	}
}

func TestAskServerClose(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	ended := make(chan error, 1)
	a := newAskTest(t, func(ctx context.Context, a provider.Action) (bool, error) {
		close(asked)
		<-ctx.Done()
		ended <- ctx.Err()
		return true, nil
	})
	replied := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", a.s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":{"command":"ls"}}}}`))
		resp, err := a.client.Do(req)
		if err != nil {
			replied <- ""
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		replied <- string(b)
	}()
	<-asked
	a.s.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ask ended with %v", err)
		}
	default:
		t.Error("Close returned before the ask ended")
	}
	if r := <-replied; strings.Contains(r, "allow") {
		t.Errorf("answered after Close: %s", r)
	}
	wantStopped(t, a.s)
	a.s.Close() // twice is fine
}

// wantStopped checks the server and its config file are gone.
func wantStopped(t *testing.T, s *askServer) {
	t.Helper()
	if stillServes(s.url) {
		t.Errorf("%s still serves", s.url)
	}
	if _, err := os.Stat(s.config); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("config file left: %v", err)
	}
}

// stillServes reports whether the server at url answers a ping. A
// refused connection is not all it checks: another test's listener may
// have the freed port by now, but not the token.
func stillServes(url string) bool {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	resp, err := client.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// A request's context that ends closes the server by itself.
func TestAskServerClosesWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := startAskServer(ctx, serveOpts{Ask: never, Beat: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		select {
		case <-s.served:
		default:
			if time.Now().After(deadline) {
				t.Fatal("the server still serves after its context ended")
			}
			continue
		}
		break
	}
	s.Close()
	wantStopped(t, s)
}

// FuzzAskServerMessage feeds the JSON-RPC handling arbitrary bodies: it
// must never panic, and it must answer every request with one JSON-RPC
// response (a result or an error) and a notification with 202.
func FuzzAskServerMessage(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `[]`, `null`, `"x"`, `{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":{"command":"ls"}}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Edit","input":null}}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
	} {
		f.Add([]byte(seed))
	}
	s := &askServer{
		ask:   func(context.Context, provider.Action) (bool, error) { return true, nil },
		beat:  time.Minute,
		calls: map[string]*pendingCall{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	f.Fuzz(func(t *testing.T, body []byte) {
		status, reply := s.handle(context.Background(), body)
		if reply == nil {
			if status != http.StatusAccepted {
				t.Fatalf("no reply with status %d", status)
			}
			return
		}
		if status != http.StatusOK && status != http.StatusBadRequest {
			t.Fatalf("status %d", status)
		}
		b, err := json.Marshal(reply)
		if err != nil {
			t.Fatalf("reply does not encode: %v", err)
		}
		var back struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(b, &back); err != nil || back.JSONRPC != "2.0" || len(back.ID) == 0 ||
			(len(back.Result) == 0) == (len(back.Error) == 0) {
			t.Fatalf("bad reply %s", b)
		}
		if !bytes.Equal(back.ID, []byte("null")) && !validID(back.ID) {
			t.Fatalf("reply id %s", back.ID)
		}
	})
}

// The server offers Conch's tools for the run beside approve (or alone),
// runs a call through Call, says when it failed, and ends a long call the
// CLI cancels.
func TestAskServerOffersConchsTools(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	call := func(ctx context.Context, name string, args json.RawMessage) (string, bool) {
		switch name {
		case "report_result":
			return "Reported " + string(args), false
		case "delegate":
			close(started)
			<-ctx.Done() // waits for its helpers until the CLI gives up
			return "", true
		}
		return "no such tool", true
	}
	s, err := startAskServer(context.Background(), serveOpts{
		Tools: []provider.ToolSpec{
			{Name: "report_result", Description: "End your task.", Schema: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`)},
			{Name: "delegate", Description: "Split the work."},
		},
		Call: call, Beat: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() { s.Close(); tr.CloseIdleConnections() })
	a := &askTest{t: t, s: s, client: &http.Client{Transport: tr, Timeout: 5 * time.Second}}

	_, body := a.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if !strings.Contains(body, `"name":"report_result"`) || !strings.Contains(body, `"name":"delegate"`) || strings.Contains(body, `"approve"`) {
		t.Fatalf("tools/list without Ask: %s", body)
	}
	if !strings.Contains(body, `"required":["summary"]`) || !strings.Contains(body, `"inputSchema":{"type":"object"}`) {
		t.Fatalf("the schemas did not come through: %s", body)
	}
	_, body = a.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report_result","arguments":{"summary":"ok"}}}`)
	if want := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"text":"Reported {\"summary\":\"ok\"}","type":"text"}],"isError":false}}`; body != want {
		t.Fatalf("a call:\n%s\nwant\n%s", body, want)
	}
	_, body = a.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":{}}}}`)
	if !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "unknown tool: approve") {
		t.Fatalf("approve without Ask: %s", body)
	}
	done := make(chan string, 1)
	go func() {
		_, b := a.post(`{"jsonrpc":"2.0","id":"d1","method":"tools/call","params":{"name":"delegate","arguments":{"parts":[]}}}`)
		done <- b
	}()
	<-started
	a.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"d1"}}`)
	select {
	case b := <-done:
		if !strings.Contains(b, `"code":-32800`) {
			t.Fatalf("a cancelled call answered %s", b)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a cancelled call never ended")
	}
}
