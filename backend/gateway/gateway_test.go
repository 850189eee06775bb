package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"

	"conch/backend/activity"
	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/provider/shell"
	"conch/backend/search"
	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

const token = "0123456789abcdef0123456789abcdef0123456789abcdef"

type env struct {
	srv  *httptest.Server
	base string // http://127.0.0.1:PORT
	dir  string
	bus  *event.Bus
}

func setup(t testing.TB) *env { return setupShell(t, "") }

// setupShell starts a gateway whose shell provider runs bash (or, for the
// fuzzer, a program that ignores its arguments, so fuzzed text never runs).
func setupShell(t testing.TB, bash string) *env { return setupSeeded(t, bash, nil) }

// setupSeeded is setupShell over a store that seed filled first, as a
// Conch that ran before left it.
func setupSeeded(t testing.TB, bash string, seed func(st *store.Bolt)) *env {
	t.Helper()
	home := t.TempDir()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	if seed != nil {
		seed(st)
	}
	bus := event.NewBus()
	logs := output.New(filepath.Join(home, "tasks"))
	runner := taskrun.New(taskrun.Config{
		Store: st, Bus: bus, Logs: logs, Home: dir,
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: dir, Bash: bash, Grace: 300 * time.Millisecond}},
	})
	idx := search.New(search.Config{Dir: filepath.Join(home, search.DirName), Store: st, Logs: logs, Bus: bus})
	if err := idx.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	gw, err := gateway.New(gateway.Config{
		// Show does what the app's does for the page: it says app.open.
		API: service.New(service.Config{Tasks: runner, Logs: logs, Prefs: st, UserHome: dir, Search: idx, Activity: activity.New(st),
			Show: func(id string) { bus.Publish(event.Event{Type: event.Open, ID: id}) }}),
		Bus: bus, Token: token,
		Assets: fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>Conch</title>")}},
	}, srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = gw
	srv.Start()
	t.Cleanup(func() {
		bus.Close()
		srv.Close()
		runner.Stop()
		idx.Stop()
		_ = st.Close()
	})
	return &env{srv: srv, base: srv.URL, dir: dir, bus: bus}
}

type req struct {
	method, path, body, contentType, host, origin string
	noToken                                       bool
}

func (e *env) do(t testing.TB, r req) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, e.base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != "" {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		hr.Header.Set("Content-Type", ct)
	}
	if !r.noToken {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	if r.host != "" {
		hr.Host = r.host
	}
	if r.origin != "" {
		hr.Header.Set("Origin", r.origin)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// wantError checks status and the error body's code.
func wantError(t testing.TB, resp *http.Response, b []byte, status int, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	var eb gateway.ErrorBody
	if err := json.Unmarshal(b, &eb); err != nil {
		t.Fatalf("error body is not JSON: %q", b)
	}
	if string(eb.Error.Code) != code || eb.Error.Message == "" {
		t.Fatalf("error %+v, want code %q", eb.Error, code)
	}
}

func (e *env) create(t testing.TB, body string) task.Task {
	t.Helper()
	resp, b := e.do(t, req{method: "POST", path: "/api/tasks", body: body})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	var tk task.Task
	if err := json.Unmarshal(b, &tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func (e *env) get(t testing.TB, id string) task.Task {
	t.Helper()
	resp, b := e.do(t, req{method: "GET", path: "/api/tasks/" + id})
	if resp.StatusCode != 200 {
		t.Fatalf("get: %d %s", resp.StatusCode, b)
	}
	var tk task.Task
	if err := json.Unmarshal(b, &tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func (e *env) waitStatus(t testing.TB, id string, s task.Status) task.Task {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		tk := e.get(t, id)
		if tk.Status == s {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task never became %s: %+v", s, tk)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHostOriginAndTokenChecks(t *testing.T) {
	e := setup(t)
	port := strings.TrimPrefix(e.base, "http://127.0.0.1:")
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port} {
		if resp, b := e.do(t, req{method: "GET", path: "/api/tasks", host: host}); resp.StatusCode != 200 {
			t.Errorf("host %s refused: %d %s", host, resp.StatusCode, b)
		}
	}
	for _, host := range []string{"evil.example:" + port, "127.0.0.1:1", "localhost", "10.0.0.1:" + port} {
		resp, b := e.do(t, req{method: "GET", path: "/api/tasks", host: host})
		wantError(t, resp, b, 403, "bad_host")
	}
	resp, b := e.do(t, req{method: "GET", path: "/api/tasks", origin: "http://evil.example"})
	wantError(t, resp, b, 403, "bad_origin")
	resp, b = e.do(t, req{method: "GET", path: "/api/tasks", origin: "https://127.0.0.1:" + port})
	wantError(t, resp, b, 403, "bad_origin")
	if resp, _ := e.do(t, req{method: "GET", path: "/api/tasks", origin: "http://localhost:" + port}); resp.StatusCode != 200 {
		t.Errorf("served origin refused: %d", resp.StatusCode)
	}
	resp, b = e.do(t, req{method: "GET", path: "/api/tasks", noToken: true})
	wantError(t, resp, b, 401, "unauthorized")
	// A wrong token, as a header and as a cookie.
	hr, _ := http.NewRequest("GET", e.base+"/api/tasks", nil)
	hr.Header.Set("Authorization", "Bearer wrong")
	if r, _ := http.DefaultClient.Do(hr); r.StatusCode != 401 {
		t.Errorf("wrong bearer: %d", r.StatusCode)
	}
	// No cookie signs anything in, not even one holding the token: the
	// browser would send it along with any other page's request.
	hr, _ = http.NewRequest("GET", e.base+"/api/tasks", nil)
	hr.AddCookie(&http.Cookie{Name: "conch_session", Value: token})
	if r, _ := http.DefaultClient.Do(hr); r.StatusCode != 401 {
		t.Errorf("the token as a cookie: %d", r.StatusCode)
	}
}

// The page and its routes are served without the token (they hold none;
// the page reads it from the link's fragment); an old ?token= link is
// refused with a page saying what to open instead.
func TestThePageNeedsNoTokenAndOldLinksAreRefused(t *testing.T) {
	e := setup(t)
	for _, p := range []string{"/", "/tasks"} {
		resp, b := e.do(t, req{method: "GET", path: p, noToken: true})
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte("<title>Conch</title>")) || resp.Header.Get("Set-Cookie") != "" {
			t.Fatalf("%s: %d %s (cookie %q)", p, resp.StatusCode, b, resp.Header.Get("Set-Cookie"))
		}
	}
	resp, b := e.do(t, req{method: "GET", path: "/?token=" + token, noToken: true})
	if resp.StatusCode != 400 || !bytes.Contains(b, []byte("after <code>#</code>")) || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("old link: %d %s", resp.StatusCode, b)
	}
}

// Every answer, page, API or error, forbids framing.
func TestNoAnswerMayBeFramed(t *testing.T) {
	e := setup(t)
	for _, r := range []req{
		{method: "GET", path: "/", noToken: true},
		{method: "GET", path: "/api/tasks"},
		{method: "GET", path: "/api/tasks", noToken: true},
		{method: "GET", path: "/api/nope"},
		{method: "GET", path: "/api/tasks", host: "evil.example"},
	} {
		resp, _ := e.do(t, r)
		if resp.Header.Get("Content-Security-Policy") != "frame-ancestors 'none'" || resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s %s (%d): headers %v", r.method, r.path, resp.StatusCode, resp.Header)
		}
	}
}

// A path with . or .. or an empty part is refused in JSON, not redirected.
func TestUncleanPathsAreRefusedNotRedirected(t *testing.T) {
	e := setup(t)
	for _, p := range []string{"/api/tasks/../doctor", "/api/tasks/x/..", "/api//tasks", "/api/./tasks", "/api/tasks/%2e%2e/doctor", "/../etc/passwd", "/a/../index.html"} {
		resp, b := e.do(t, req{method: "GET", path: p})
		wantError(t, resp, b, 400, "bad_path")
	}
	if resp, _ := e.do(t, req{method: "GET", path: "/api/tasks/"}); resp.StatusCode != 404 {
		t.Errorf("a trailing slash: %d", resp.StatusCode)
	}
}

func wsURL(e *env) string { return "ws" + strings.TrimPrefix(e.base, "http") + "/api/events" }

func TestWebSocketChecks(t *testing.T) {
	e := setup(t)
	port := strings.TrimPrefix(e.base, "http://127.0.0.1:")
	cases := []struct {
		name   string
		header http.Header
		host   string
		status int
	}{
		{"no token", http.Header{}, "", 401},
		{"the token as a cookie", http.Header{"Cookie": {"conch_session=" + token}}, "", 401},
		{"wrong host", http.Header{"Authorization": {"Bearer " + token}}, "evil.example:" + port, 403},
		{"wrong origin", http.Header{"Authorization": {"Bearer " + token}, "Origin": {"http://evil.example"}}, "", 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.header.Clone()
			if c.host != "" {
				h.Set("Host", c.host)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			conn, resp, err := websocket.Dial(ctx, wsURL(e), &websocket.DialOptions{HTTPHeader: h, Host: c.host})
			if err == nil {
				conn.CloseNow()
				t.Fatal("dial succeeded")
			}
			if resp == nil || resp.StatusCode != c.status {
				t.Fatalf("want %d, got %v (%v)", c.status, resp, err)
			}
		})
	}
}

func TestWebSocketStreamsTaskChanges(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	port := strings.TrimPrefix(e.base, "http://127.0.0.1:")
	conn, _, err := websocket.Dial(ctx, wsURL(e), &websocket.DialOptions{HTTPHeader: http.Header{
		"Authorization": {"Bearer " + token}, "Origin": {"http://127.0.0.1:" + port},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	tk := e.create(t, `{"text":"echo ws","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	var statuses []task.Status
	lastRev := int64(0)
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (saw %v)", err, statuses)
		}
		var ev event.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != event.TaskChanged || ev.Task == nil || ev.Task.ID != tk.ID {
			t.Fatalf("event %s", b)
		}
		if ev.Task.Rev <= lastRev {
			t.Fatalf("rev went from %d to %d", lastRev, ev.Task.Rev)
		}
		lastRev = ev.Task.Rev
		if n := len(statuses); n == 0 || statuses[n-1] != ev.Task.Status {
			statuses = append(statuses, ev.Task.Status)
		}
		if ev.Task.Status == task.Done {
			break
		}
	}
	if fmt.Sprint(statuses) != "[queued running done]" {
		t.Fatalf("statuses %v", statuses)
	}
	resp, _ := e.do(t, req{method: "DELETE", path: "/api/tasks/" + tk.ID})
	if resp.StatusCode != 204 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	_, b, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"task.deleted","id":"` + tk.ID + `","prev":"done"}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}

// A client that does not read is dropped instead of holding anyone up.
func TestSlowWebSocketClientIsDropped(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL(e), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	big := strings.Repeat("x", 60<<10)
	start := time.Now()
	for i := 0; i < 2000; i++ {
		e.bus.Publish(event.Event{Type: event.TaskChanged, Task: &task.Task{ID: "x", Text: big, Rev: int64(i)}})
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("publishing to a stalled client took %v", d)
	}
	// Reading now finds some events, then the stream closed by the server
	// (with "try again later" when the close frame still fits through).
	n := 0
	for {
		_, _, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal("the server never dropped the stalled client")
			}
			if n >= 2000 {
				t.Fatalf("read %d events before the drop (%v)", n, err)
			}
			return
		}
		n++
	}
}

func TestBadInputGetsClearErrors(t *testing.T) {
	e := setup(t)
	done := e.create(t, `{"text":"echo hi","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	e.waitStatus(t, done.ID, task.Done)
	running := e.create(t, `{"text":"sleep 30","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	e.waitStatus(t, running.ID, task.Running)

	cases := []struct {
		name string
		r    req
		st   int
		code string
	}{
		{"malformed json", req{method: "POST", path: "/api/tasks", body: `{"text":`}, 400, "bad_json"},
		{"not an object", req{method: "POST", path: "/api/tasks", body: `[1,2]`}, 400, "bad_json"},
		{"wrong type", req{method: "POST", path: "/api/tasks", body: `{"text":5}`}, 400, "bad_json"},
		{"two values", req{method: "POST", path: "/api/tasks", body: `{"text":"a"} {}`}, 400, "bad_json"},
		{"unknown field", req{method: "POST", path: "/api/tasks", body: `{"text":"ls","colour":"red"}`}, 400, "unknown_field"},
		{"unknown option", req{method: "POST", path: "/api/tasks", body: `{"text":"ls","options":{"sudo":true}}`}, 400, "unknown_field"},
		{"empty text", req{method: "POST", path: "/api/tasks", body: `{"text":"  "}`}, 400, "invalid"},
		{"bad mode", req{method: "POST", path: "/api/tasks", body: `{"text":"ls","options":{"mode":"god"}}`}, 400, "invalid"},
		{"relative cwd", req{method: "POST", path: "/api/tasks", body: `{"text":"ls","options":{"cwd":"../x"}}`}, 400, "invalid"},
		{"check in plan mode", req{method: "POST", path: "/api/tasks", body: `{"text":"ls","options":{"mode":"plan","check":"true"}}`}, 400, "invalid"},
		{"check retries out of range", req{method: "POST", path: "/api/tasks", body: `{"text":"ls","options":{"check":"true","checkRetries":9}}`}, 400, "invalid"},
		{"too large", req{method: "POST", path: "/api/tasks", body: `{"text":"` + strings.Repeat("a", 1<<20) + `"}`}, 413, "too_large"},
		{"not json", req{method: "POST", path: "/api/tasks", body: `text=ls`, contentType: "application/x-www-form-urlencoded"}, 415, "not_json"},
		{"no content type", req{method: "POST", path: "/api/tasks/" + done.ID + "/answer", body: `{}`, contentType: "text/plain"}, 415, "not_json"},
		{"unknown id", req{method: "GET", path: "/api/tasks/nope"}, 404, "not_found"},
		{"unknown id stop", req{method: "POST", path: "/api/tasks/nope/stop"}, 404, "not_found"},
		{"unknown id output", req{method: "GET", path: "/api/tasks/nope/output"}, 404, "not_found"},
		{"unknown route", req{method: "GET", path: "/api/nothing"}, 404, "not_found"},
		{"unknown action", req{method: "POST", path: "/api/tasks/" + done.ID + "/explode"}, 404, "not_found"},
		{"wrong method", req{method: "PUT", path: "/api/tasks"}, 405, "method_not_allowed"},
		{"wrong method on action", req{method: "GET", path: "/api/tasks/" + done.ID + "/stop"}, 405, "method_not_allowed"},
		{"stop finished", req{method: "POST", path: "/api/tasks/" + done.ID + "/stop"}, 409, "invalid_transition"},
		{"retry running", req{method: "POST", path: "/api/tasks/" + running.ID + "/retry"}, 409, "invalid_transition"},
		{"resume a command", req{method: "POST", path: "/api/tasks/" + done.ID + "/resume"}, 409, "conflict"},
		{"body on resume", req{method: "POST", path: "/api/tasks/" + done.ID + "/resume", body: `{"x":1}`}, 400, "invalid"},
		{"delete running", req{method: "DELETE", path: "/api/tasks/" + running.ID}, 409, "conflict"},
		{"answer nothing asked", req{method: "POST", path: "/api/tasks/" + done.ID + "/answer", body: `{"askId":"x","allow":true}`}, 409, "conflict"},
		{"answer without allow", req{method: "POST", path: "/api/tasks/" + done.ID + "/answer", body: `{"askId":"x"}`}, 400, "invalid"},
		{"bad offset", req{method: "GET", path: "/api/tasks/" + done.ID + "/output?offset=-1"}, 400, "invalid"},
		{"offset not a number", req{method: "GET", path: "/api/tasks/" + done.ID + "/output?offset=abc"}, 400, "invalid"},
		{"body on stop", req{method: "POST", path: "/api/tasks/" + running.ID + "/stop", body: `{"force":true}`}, 400, "invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, b := e.do(t, c.r)
			wantError(t, resp, b, c.st, c.code)
		})
	}
	if got := e.get(t, running.ID); got.Status != task.Running {
		t.Fatalf("a refused request changed a task: %s", got.Status)
	}
}

func TestTaskLifecycleOverHTTP(t *testing.T) {
	e := setup(t)
	tk := e.create(t, `{"text":"printf 'abc\\ndef\\n'","title":"Print","options":{"mode":"ask","cwd":"`+e.dir+`"}}`)
	if tk.Title != "Print" || tk.Status != task.Queued {
		t.Fatalf("created %+v", tk)
	}
	asking := e.waitStatus(t, tk.ID, task.NeedsYou)
	if resp, b := e.do(t, req{method: "GET", path: "/api/approvals"}); resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"taskId":"`+tk.ID+`"`)) {
		t.Fatalf("approvals: %d %s", resp.StatusCode, b)
	}
	body := fmt.Sprintf(`{"askId":%q,"allow":true}`, asking.Ask.ID)
	if resp, b := e.do(t, req{method: "POST", path: "/api/tasks/" + tk.ID + "/answer", body: body}); resp.StatusCode != 200 {
		t.Fatalf("answer %d %s", resp.StatusCode, b)
	}
	resp, b := e.do(t, req{method: "POST", path: "/api/tasks/" + tk.ID + "/answer", body: body})
	wantError(t, resp, b, 409, "conflict")
	e.waitStatus(t, tk.ID, task.Done)

	resp, b = e.do(t, req{method: "GET", path: "/api/tasks/" + tk.ID + "/output"})
	if resp.StatusCode != 200 || string(b) != "abc\ndef\n" || resp.Header.Get("X-Next-Offset") != "8" {
		t.Fatalf("output: %d %q next=%s", resp.StatusCode, b, resp.Header.Get("X-Next-Offset"))
	}
	resp, b = e.do(t, req{method: "GET", path: "/api/tasks/" + tk.ID + "/output?offset=4&max=2"})
	if string(b) != "de" || resp.Header.Get("X-Next-Offset") != "6" {
		t.Fatalf("output from 4: %q next=%s", b, resp.Header.Get("X-Next-Offset"))
	}
	resp, b = e.do(t, req{method: "GET", path: "/api/tasks/" + tk.ID + "/output?offset=100"})
	// Past the end: clamped to the size, so the reader carries on from there.
	if resp.StatusCode != 200 || len(b) != 0 || resp.Header.Get("X-Next-Offset") != "8" {
		t.Fatalf("output past the end: %d %q %s", resp.StatusCode, b, resp.Header.Get("X-Next-Offset"))
	}

	if resp, b := e.do(t, req{method: "POST", path: "/api/tasks/" + tk.ID + "/retry"}); resp.StatusCode != 200 {
		t.Fatalf("retry %d %s", resp.StatusCode, b)
	}
	e.waitStatus(t, tk.ID, task.NeedsYou)
	if resp, b := e.do(t, req{method: "POST", path: "/api/tasks/" + tk.ID + "/stop"}); resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"status":"stopped"`)) {
		t.Fatalf("stop %d %s", resp.StatusCode, b)
	}

	resp, b = e.do(t, req{method: "GET", path: "/api/tasks"})
	var list struct {
		Tasks      []task.Task        `json:"tasks"`
		Concurrent taskrun.Concurrent `json:"concurrent"`
	}
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("list: %v %s", err, b)
	}
	if len(list.Tasks) != 1 || list.Concurrent.Background.Limit != 3 || list.Concurrent.Helper.Limit != 4 {
		t.Fatalf("list %+v", list)
	}
	if !bytes.Contains(b, []byte(`"concurrent":{"background":{"running":0,"limit":3},"helper":{"running":0,"limit":4}}`)) {
		t.Fatalf("concurrent shape: %s", b)
	}
}

func TestLoadTokenCreatesPrivateFileOnce(t *testing.T) {
	home := t.TempDir()
	tok, err := gateway.LoadToken(home)
	if err != nil || len(tok) < 32 {
		t.Fatalf("%q %v", tok, err)
	}
	fi, err := os.Stat(filepath.Join(home, gateway.TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v %v", fi.Mode(), err)
	}
	again, err := gateway.LoadToken(home)
	if err != nil || again != tok {
		t.Fatalf("second load %q %v", again, err)
	}
}

// FuzzCreateBody sends arbitrary bodies to POST /api/tasks: every answer is a
// 201 or a 4xx with a JSON error, never a 500 or a panic.
func FuzzCreateBody(f *testing.F) {
	for _, s := range []string{`{"text":"true","options":{"mode":"plan"}}`, `{"text":`, `[]`, `{"text":"x","options":{"cwd":"/nope"}}`, `null`, `{"text":"\u0000"}`} {
		f.Add(s)
	}
	e := setupShell(f, "/bin/true")
	client := &http.Client{Timeout: 10 * time.Second}
	f.Fuzz(func(t *testing.T, body string) {
		hr, _ := http.NewRequest("POST", e.base+"/api/tasks", strings.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			var tk task.Task
			if err := json.Unmarshal(b, &tk); err != nil || tk.ID == "" {
				t.Fatalf("201 without a task: %s", b)
			}
			return
		}
		if resp.StatusCode >= 500 || resp.StatusCode < 400 {
			t.Fatalf("status %d for %q: %s", resp.StatusCode, body, b)
		}
		var eb gateway.ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
			t.Fatalf("error body %q", b)
		}
	})
}

func TestPreferencesSetTheLimits(t *testing.T) {
	e := setup(t)
	var p pref.Preferences
	resp, b := e.do(t, req{method: "GET", path: "/api/preferences"})
	if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != 200 || p.Limits.Background != 3 || p.Limits.Helper != 4 {
		t.Fatalf("defaults: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do(t, req{method: "PATCH", path: "/api/preferences", body: `{"limits":{"background":1}}`})
	if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != 200 || p.Limits.Background != 1 || p.Limits.Helper != 4 {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	first := e.create(t, `{"text":"sleep 30","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	second := e.create(t, `{"text":"echo later","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	e.waitStatus(t, first.ID, task.Running)
	time.Sleep(200 * time.Millisecond)
	if got := e.get(t, second.ID); got.Status != task.Queued {
		t.Fatalf("second task with a limit of 1: %s", got.Status)
	}
	e.do(t, req{method: "POST", path: "/api/tasks/" + first.ID + "/stop"})
	e.waitStatus(t, second.ID, task.Done)

	resp, b = e.do(t, req{method: "PATCH", path: "/api/preferences", body: `{"limits":{"helper":0}}`})
	wantError(t, resp, b, 400, "invalid")
	resp, b = e.do(t, req{method: "PATCH", path: "/api/preferences", body: `{"theme":"pink"}`})
	wantError(t, resp, b, 400, "unknown_field")
	resp, b = e.do(t, req{method: "GET", path: "/api/preferences"})
	if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != 200 || p.Limits.Background != 1 || p.Limits.Helper != 4 {
		t.Fatalf("refused patches changed preferences: %s", b)
	}
}

// Open folder asks the system's opener (xdg-open on Linux) to show the
// task's folder: here a script of that name on PATH records what it was
// given. An unknown task is 404; a body is refused.
func TestOpenFolderShowsTheTasksFolder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the opener checked here is xdg-open")
	}
	bin := t.TempDir()
	got := filepath.Join(bin, "opened")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + got + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	e := setup(t)
	tk := e.create(t, `{"text":"true","options":{"mode":"auto"}}`)
	e.waitStatus(t, tk.ID, task.Done)
	if resp, b := e.do(t, req{method: "POST", path: "/api/tasks/" + tk.ID + "/open-folder"}); resp.StatusCode != 204 {
		t.Fatalf("open folder: %d %s", resp.StatusCode, b)
	}
	var opened []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if opened, _ = os.ReadFile(got); len(opened) > 0 {
			break
		}
	}
	if strings.TrimSpace(string(opened)) != tk.Cwd {
		t.Errorf("the opener got %q, want %q", opened, tk.Cwd)
	}
	if resp, _ := e.do(t, req{method: "POST", path: "/api/tasks/nope/open-folder"}); resp.StatusCode != 404 {
		t.Errorf("unknown task: %d", resp.StatusCode)
	}
	if resp, _ := e.do(t, req{method: "POST", path: "/api/tasks/" + tk.ID + "/open-folder", body: `{"x":1}`}); resp.StatusCode != 400 {
		t.Errorf("a body: %d", resp.StatusCode)
	}
}
