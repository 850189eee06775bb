//go:build unix

package responses

// Tests that run the real `codex app-server` (JSON-RPC over stdio)
// against the scripted Responses server; docs/agents/codex.md writes up
// what they show. They are skipped when the codex binary is missing
// ($CONCH_CODEX, else the pinned one scripts/setup installs). Set
// CONCH_CODEX_CAPTURE=dir to keep each test's JSON-RPC transcript
// (dir/TestName.jsonl), codex's stderr and the model requests.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conch/backend/testrig/modelserver"
)

// script answers the i-th /responses request with replies[i], and the
// ones past the end with the last reply.
func script(replies ...modelserver.Reply) modelserver.Brain {
	var mu sync.Mutex
	n := 0
	return func(modelserver.Turn) modelserver.Reply {
		mu.Lock()
		defer mu.Unlock()
		r := replies[min(n, len(replies)-1)]
		n++
		return r
	}
}

// isServerRequest is true of a request from codex (it has an id and a
// method; a response has no method).
func isServerRequest(m msg) bool { return m.ID != nil && m.Method != "" }

// nextRequestOrEnd waits for a server request or turn/completed.
func (a *appServer) nextRequestOrEnd(timeout time.Duration) msg {
	a.t.Helper()
	return a.expect("server request or turn/completed", timeout, func(m msg) bool {
		return isServerRequest(m) || m.Method == "turn/completed"
	})
}

// itemCompleted waits for item/completed of an item of type typ.
func (a *appServer) itemCompleted(typ string, timeout time.Duration) msg {
	a.t.Helper()
	return a.expect("item/completed "+typ, timeout, func(m msg) bool {
		return m.Method == "item/completed" && field(m.Params, "item.type") == typ
	})
}

// lastResult is the text of the last tool result the model was sent.
func lastResult(t *testing.T, srv *Server) modelserver.Message {
	t.Helper()
	turns := srv.Turns()
	for i := len(turns) - 1; i >= 0; i-- {
		if rs := turns[i].Results(); len(rs) > 0 {
			return rs[len(rs)-1]
		}
	}
	t.Fatalf("the model was sent no tool result; %d requests", len(turns))
	return modelserver.Message{}
}

func hasTool(turn modelserver.Turn, name string) bool {
	for _, n := range turn.Tools {
		if n == name {
			return true
		}
	}
	return false
}

// (a) A plain text reply: initialize, thread/start, turn/start, then
// item/agentMessage/delta notifications and turn/completed.
func TestCodexTextReply(t *testing.T) {
	codexBin(t)
	const text = "Hello from the scripted model."
	srv := newServer(t, func(modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: text} })
	a := startCodex(t, srv.BaseURL(), options{})
	init := a.handshake()
	if field(init, "codexHome") != a.home {
		t.Errorf("initialize: codexHome %q, want %q (%s)", field(init, "codexHome"), a.home, init)
	}
	cwd := t.TempDir()
	thread, res := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": "on-request", "sandbox": "workspace-write"})
	if got := field(res, "modelProvider"); got != "conch" {
		t.Errorf("thread/start modelProvider %q, want conch: %s", got, res)
	}
	if got := field(res, "sandbox.type"); got != "workspaceWrite" {
		t.Errorf("thread/start sandbox.type %q, want workspaceWrite", got)
	}
	mark := a.mark()
	turn := a.startTurn(thread, "say hello", nil)
	done := a.expectMethod("turn/completed", 60*time.Second)
	if got := field(done.Params, "turn.status"); got != "completed" {
		t.Fatalf("turn status %q, want completed: %s", got, done.Params)
	}
	if got := field(done.Params, "turn.id"); got != turn {
		t.Errorf("turn/completed for %q, want %q", got, turn)
	}
	var deltas strings.Builder
	var completedText string
	seen := map[string]bool{}
	for _, m := range a.since(mark) {
		seen[m.Method] = true
		switch {
		case m.Method == "item/agentMessage/delta":
			deltas.WriteString(field(m.Params, "delta"))
		case m.Method == "item/completed" && field(m.Params, "item.type") == "agentMessage":
			completedText = field(m.Params, "item.text")
		}
	}
	if deltas.String() != text || completedText != text {
		t.Errorf("deltas %q, completed agentMessage %q; want %q", deltas.String(), completedText, text)
	}
	for _, want := range []string{"thread/started", "turn/started", "item/started", "item/completed", "thread/tokenUsage/updated", "thread/status/changed"} {
		if !seen[want] {
			t.Errorf("no %s notification", want)
		}
	}

	turns := srv.Turns()
	if len(turns) != 1 {
		t.Fatalf("%d model requests, want 1", len(turns))
	}
	m := turns[0]
	if m.Model != "gpt-5.5" || m.FirstUser() != "say hello" {
		t.Errorf("model %q first user %q", m.Model, m.FirstUser())
	}
	if !strings.Contains(m.System, "<environment_context>") || !strings.Contains(m.System, cwd) {
		t.Errorf("system prompt lacks the environment context with the cwd")
	}
	for _, tool := range []string{"exec_command", "write_stdin", "apply_patch"} {
		if !hasTool(m, tool) {
			t.Errorf("tool %s not offered: %q", tool, m.Tools)
		}
	}
	if got := srv.Paths(); len(got) != 1 || got[0] != "POST /v1/responses" {
		t.Errorf("paths %q, want only POST /v1/responses", got)
	}
	r := srv.Requests()[0]
	if got := r.Header.Get("Authorization"); got != "Bearer sk-conch-test" {
		t.Errorf("Authorization %q", got)
	}
	if got := r.Header.Get("Originator"); got != "conch" {
		t.Errorf("originator %q, want clientInfo.name", got)
	}
}

// (b) A shell command under approvalPolicy "untrusted": the approval
// request, and what accept, decline and cancel do.
func TestCodexCommandApproval(t *testing.T) {
	codexBin(t)
	for _, c := range []struct {
		decision   string
		wantStatus string // of the commandExecution item
		wantTurn   string
		wantFile   bool
		wantResult string // in the tool result the model sees next
	}{
		{"accept", "completed", "completed", true, "Process exited with code 0"},
		{"acceptForSession", "completed", "completed", true, "Process exited with code 0"},
		{"decline", "declined", "completed", false, `exec_command failed: CreateProcess { message: "Rejected(\"rejected by user\")" }`},
		{"cancel", "declined", "interrupted", false, ""},
	} {
		t.Run(c.decision, func(t *testing.T) {
			srv := newServer(t, script(
				modelserver.Reply{Text: "I will create the file.", Calls: []modelserver.Call{Exec("call_make", "printf hi > made.txt && echo created")}},
				modelserver.Reply{Text: "Done."},
			))
			a := startCodex(t, srv.BaseURL(), options{})
			a.handshake()
			cwd := t.TempDir()
			thread, _ := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": "untrusted", "sandbox": "workspace-write"})
			turn := a.startTurn(thread, "make a file", nil)
			req := a.nextRequestOrEnd(60 * time.Second)
			if req.Method != "item/commandExecution/requestApproval" {
				t.Fatalf("got %s %s, want item/commandExecution/requestApproval", req.Method, req.Params)
			}
			for k, want := range map[string]string{
				"threadId": thread, "turnId": turn, "itemId": "call_make", "cwd": cwd, "kind": "command",
				"command": "/bin/bash -lc 'printf hi > made.txt && echo created'",
			} {
				if got := field(req.Params, k); got != want {
					t.Errorf("approval %s = %q, want %q", k, got, want)
				}
			}
			a.respond(req.ID, map[string]any{"decision": c.decision})
			item := a.itemCompleted("commandExecution", 60*time.Second)
			if got := field(item.Params, "item.status"); got != c.wantStatus {
				t.Errorf("commandExecution status %q, want %q: %s", got, c.wantStatus, item.Params)
			}
			done := a.expectMethod("turn/completed", 60*time.Second)
			if got := field(done.Params, "turn.status"); got != c.wantTurn {
				t.Errorf("turn status %q, want %q", got, c.wantTurn)
			}
			if _, err := os.Stat(filepath.Join(cwd, "made.txt")); (err == nil) != c.wantFile {
				t.Errorf("made.txt exists: %v, want %v", err == nil, c.wantFile)
			}
			if c.wantResult == "" {
				if n := len(srv.Turns()); n != 1 {
					t.Errorf("%d model requests after cancel, want 1", n)
				}
				return
			}
			res := lastResult(t, srv)
			if res.CallID != "call_make" || !strings.Contains(res.Text, c.wantResult) {
				t.Errorf("model saw %s: %q, want %q", res.CallID, res.Text, c.wantResult)
			}
		})
	}
}

// (b) Under "on-request" the sandbox decides; the model asks to leave
// it with sandbox_permissions "require_escalated", and its
// justification is the request's reason.
func TestCodexEscalationApproval(t *testing.T) {
	codexBin(t)
	call := modelserver.Call{ID: "call_esc", Name: "exec_command", Args: json.RawMessage(
		`{"cmd":"printf hi > made.txt","sandbox_permissions":"require_escalated","justification":"May I write made.txt?"}`)}
	srv := newServer(t, script(modelserver.Reply{Calls: []modelserver.Call{call}}, modelserver.Reply{Text: "Done."}))
	a := startCodex(t, srv.BaseURL(), options{})
	a.handshake()
	cwd := t.TempDir()
	thread, _ := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": "on-request", "sandbox": "workspace-write"})
	a.startTurn(thread, "make a file", nil)
	req := a.nextRequestOrEnd(60 * time.Second)
	if req.Method != "item/commandExecution/requestApproval" || field(req.Params, "reason") != "May I write made.txt?" {
		t.Fatalf("got %s %s, want a command approval with the justification as reason", req.Method, req.Params)
	}
	a.respond(req.ID, map[string]any{"decision": "accept"})
	if done := a.expectMethod("turn/completed", 60*time.Second); field(done.Params, "turn.status") != "completed" {
		t.Errorf("turn: %s", done.Params)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err != nil {
		t.Errorf("made.txt: %v", err)
	}
}

// (c) apply_patch (a freeform custom tool): item/fileChange/requestApproval
// under "untrusted"; none under "on-request" in workspace-write.
func TestCodexPatchApproval(t *testing.T) {
	codexBin(t)
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hello patch\n*** End Patch\n"
	for _, c := range []struct {
		name, policy, decision string
		wantAsk, wantFile      bool
		wantResult             string
	}{
		{"untrusted-accept", "untrusted", "accept", true, true, "Success. Updated the following files:\nA hello.txt"},
		{"untrusted-decline", "untrusted", "decline", true, false, "patch rejected by user"},
		{"on-request", "on-request", "", false, true, "Success. Updated the following files:\nA hello.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, script(
				modelserver.Reply{Calls: []modelserver.Call{Patch("call_patch", patch)}},
				modelserver.Reply{Text: "Done."},
			))
			a := startCodex(t, srv.BaseURL(), options{})
			a.handshake()
			cwd := t.TempDir()
			thread, _ := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": c.policy, "sandbox": "workspace-write"})
			turn := a.startTurn(thread, "add hello.txt", nil)
			started := a.expect("fileChange started", 60*time.Second, func(m msg) bool {
				return m.Method == "item/started" && field(m.Params, "item.type") == "fileChange"
			})
			if got := field(started.Params, "item.changes"); !strings.Contains(got, filepath.Join(cwd, "hello.txt")) || !strings.Contains(got, `"add"`) {
				t.Errorf("fileChange changes %s", got)
			}
			m := a.nextRequestOrEnd(60 * time.Second)
			if c.wantAsk {
				if m.Method != "item/fileChange/requestApproval" || field(m.Params, "itemId") != "call_patch" || field(m.Params, "turnId") != turn {
					t.Fatalf("got %s %s, want item/fileChange/requestApproval", m.Method, m.Params)
				}
				a.respond(m.ID, map[string]any{"decision": c.decision})
				m = a.expectMethod("turn/completed", 60*time.Second)
			} else if m.Method != "turn/completed" {
				t.Fatalf("got %s %s, want no approval", m.Method, m.Params)
			}
			b, err := os.ReadFile(filepath.Join(cwd, "hello.txt"))
			if (err == nil) != c.wantFile || (c.wantFile && string(b) != "hello patch\n") {
				t.Errorf("hello.txt: %q %v; want it: %v", b, err, c.wantFile)
			}
			res := lastResult(t, srv)
			if !strings.Contains(res.Text, c.wantResult) {
				t.Errorf("model saw %q, want %q", res.Text, c.wantResult)
			}
			if srv.Turns()[1].Messages[1].Calls[0].Name != "apply_patch" {
				t.Errorf("history lacks the apply_patch call: %+v", srv.Turns()[1].Messages)
			}
		})
	}
}

// (d) approvalPolicy "never" with sandbox "workspace-write": nothing
// asks; the cwd is writable, the rest of the disk (outside /tmp) is not.
func TestCodexNeverAsks(t *testing.T) {
	codexBin(t)
	outside, err := os.MkdirTemp("/var/tmp", "conch-outside-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	srv := newServer(t, script(
		modelserver.Reply{Calls: []modelserver.Call{
			Exec("call_in", "printf hi > made.txt && echo wrote"),
			Exec("call_out", "printf hi > "+outside+"/out.txt; echo rc=$?"),
			Patch("call_patch", "*** Begin Patch\n*** Add File: patched.txt\n+x\n*** End Patch\n"),
		}},
		modelserver.Reply{Text: "Done."},
	))
	a := startCodex(t, srv.BaseURL(), options{})
	a.handshake()
	cwd := t.TempDir()
	thread, _ := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": "never", "sandbox": "workspace-write"})
	a.startTurn(thread, "write files", nil)
	if m := a.nextRequestOrEnd(60 * time.Second); m.Method != "turn/completed" {
		t.Fatalf("got %s %s, want no server request", m.Method, m.Params)
	}
	for _, f := range []string{"made.txt", "patched.txt"} {
		if _, err := os.Stat(filepath.Join(cwd, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Errorf("the sandbox let the command write %s", outside)
	}
	results := map[string]string{}
	for _, r := range srv.Turns()[1].Results() {
		results[r.CallID] = r.Text
	}
	if !strings.Contains(results["call_out"], "Read-only file system") || !strings.Contains(results["call_out"], "rc=1") {
		t.Errorf("outside write: model saw %q", results["call_out"])
	}
}

// (e) turn/interrupt during `sleep`, and what ends the sleep: not the
// interrupt, but the end of the app-server.
func TestCodexInterrupt(t *testing.T) {
	codexBin(t)
	for i, c := range []struct {
		sandbox, end string
		wantGone     bool // the sleep ends with the app-server
	}{
		{"workspace-write", "eof", true},
		{"danger-full-access", "eof", true},
		{"workspace-write", "sigterm-wrapper", true},
		{"danger-full-access", "sigkill-wrapper", false},
		{"danger-full-access", "sigkill-native", true},
	} {
		t.Run(c.sandbox+"-"+c.end, func(t *testing.T) {
			// A duration of its own, to find the process by.
			sleep := "sleep " + strconv.Itoa(3000+os.Getpid()%1000*10+i)
			srv := newServer(t, script(
				modelserver.Reply{Calls: []modelserver.Call{Exec("call_sleep", sleep)}},
				modelserver.Reply{Text: "Second turn."},
			))
			a := startCodex(t, srv.BaseURL(), options{})
			a.handshake()
			thread, _ := a.startThread(map[string]any{"cwd": t.TempDir(), "approvalPolicy": "never", "sandbox": c.sandbox})
			turn := a.startTurn(thread, "sleep", nil)
			a.expect("commandExecution started", 60*time.Second, func(m msg) bool {
				return m.Method == "item/started" && field(m.Params, "item.type") == "commandExecution"
			})
			procs := waitProcs(t, sleep, 10*time.Second)
			if len(procs) != 1 {
				t.Fatalf("%d %q processes, want 1", len(procs), sleep)
			}
			p := procs[0]
			killLater(t, p.PID)
			wrapper, _ := readProc(a.cmd.Process.Pid)
			if p.SID == wrapper.SID || p.PGID == wrapper.PGID {
				t.Errorf("sleep (sid %d pgid %d) shares the app-server's session or group (sid %d pgid %d)", p.SID, p.PGID, wrapper.SID, wrapper.PGID)
			}
			if p.Env["CONCH_MARKER"] != "conch-marker-"+t.Name() || p.Env[testKeyEnv] == "" {
				t.Errorf("sleep's environment lacks the app-server's: marker %q key %q", p.Env["CONCH_MARKER"], p.Env[testKeyEnv])
			}
			t.Logf("sleep %d sid %d; ancestry %q", p.PID, p.SID, ancestry(p.PID))

			mark := a.mark()
			res := a.mustCall("turn/interrupt", map[string]any{"threadId": thread, "turnId": turn}, 30*time.Second)
			if string(res) != "{}" {
				t.Errorf("turn/interrupt result %s", res)
			}
			done := a.expectMethod("turn/completed", 30*time.Second)
			if got := field(done.Params, "turn.status"); got != "interrupted" {
				t.Errorf("turn status %q, want interrupted", got)
			}
			for _, m := range a.since(mark) {
				if m.Method == "item/completed" {
					t.Errorf("an item completed after the interrupt: %s", m.Params)
				}
			}
			time.Sleep(time.Second)
			if !alive(p.PID) {
				t.Errorf("the sleep ended with the interrupt")
			}

			// The model's next request says what happened.
			if c.end == "eof" {
				a.startTurn(thread, "next", nil)
				a.expectMethod("turn/completed", 30*time.Second)
				last := srv.Turns()[len(srv.Turns())-1]
				res := lastResult(t, srv)
				if res.CallID != "call_sleep" || !strings.Contains(res.Text, "aborted by user") {
					t.Errorf("the model saw %q for the interrupted command", res.Text)
				}
				var aborted bool
				for _, m := range last.Messages {
					aborted = aborted || (m.Role == "user" && strings.HasPrefix(m.Text, "<turn_aborted>"))
				}
				if !aborted {
					t.Errorf("no <turn_aborted> message: %+v", last.Messages)
				}
			}

			natives := nativeOf(a.cmd.Process.Pid)
			switch c.end {
			case "eof":
				a.stdin.Close()
			case "sigterm-wrapper":
				syscall.Kill(a.cmd.Process.Pid, syscall.SIGTERM)
			case "sigkill-wrapper":
				syscall.Kill(a.cmd.Process.Pid, syscall.SIGKILL)
			case "sigkill-native":
				for _, n := range natives {
					syscall.Kill(n, syscall.SIGKILL)
				}
			}
			wait := 2 * time.Second
			if c.wantGone {
				wait = 10 * time.Second
			}
			gone := waitGone(p.PID, wait)
			if gone != c.wantGone {
				t.Errorf("after %s: sleep gone %v, want %v", c.end, gone, c.wantGone)
			}
			if c.end == "sigkill-wrapper" {
				for _, n := range natives {
					if !alive(n) {
						t.Errorf("native codex %d ended with its node wrapper", n)
					}
				}
			}
		})
	}
}

// nativeOf are the pids of the children of the node wrapper pid (the
// native codex binary).
func nativeOf(wrapper int) []int {
	var out []int
	for _, p := range findProcs("codex") {
		if p.PPID == wrapper {
			out = append(out, p.PID)
		}
	}
	return out
}

func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// (e) shell_environment_policy keeps the API key out of commands.
func TestCodexCommandEnvironment(t *testing.T) {
	codexBin(t)
	srv := newServer(t, script(
		modelserver.Reply{Calls: []modelserver.Call{Exec("call_env", "echo key=${CONCH_TEST_KEY:-unset} marker=${CONCH_MARKER:-unset}")}},
		modelserver.Reply{Text: "Done."},
	))
	a := startCodex(t, srv.BaseURL(), options{config: "\n[shell_environment_policy]\nexclude = [\"CONCH_TEST_KEY\"]\n"})
	a.handshake()
	thread, _ := a.startThread(map[string]any{"cwd": t.TempDir(), "approvalPolicy": "never", "sandbox": "workspace-write"})
	a.startTurn(thread, "env", nil)
	a.expectMethod("turn/completed", 60*time.Second)
	res := lastResult(t, srv)
	if !strings.Contains(res.Text, "key=unset marker=conch-marker-") {
		t.Errorf("command output %q, want the key excluded and the marker kept", res.Text)
	}
}

// (f) 429s and the retries: stream_max_retries retries after
// retry-after; request_max_retries does not; a quota error is not
// retried.
func TestCodexRateLimit(t *testing.T) {
	codexBin(t)
	noHint := modelserver.Reply{Status: 429, Body: `{"error":{"message":"Too many requests","type":"requests","code":"rate_limit_exceeded"}}`}
	for _, c := range []struct {
		name      string
		retries   string
		reply     modelserver.Reply
		requests  int
		wantError string
		wantInfo  string
	}{
		{"ratelimit-stream2", "stream_max_retries = 2\nrequest_max_retries = 0\n", RateLimit("gpt-5.5", 1), 3,
			"exceeded retry limit, last status: 429 Too Many Requests", `{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`},
		{"ratelimit-request2", "stream_max_retries = 0\nrequest_max_retries = 2\n", RateLimit("gpt-5.5", 1), 1,
			"exceeded retry limit, last status: 429 Too Many Requests", `{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`},
		{"ratelimit-no-retry-after", "stream_max_retries = 2\n", noHint, 1,
			"exceeded retry limit, last status: 429 Too Many Requests", `{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`},
		{"quota", "stream_max_retries = 2\nrequest_max_retries = 2\n", Quota(), 1,
			"Quota exceeded. Check your plan and billing details.", "usageLimitExceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, func(modelserver.Turn) modelserver.Reply { return c.reply })
			a := startCodex(t, srv.BaseURL(), options{retries: &c.retries})
			a.handshake()
			thread, _ := a.startThread(map[string]any{"cwd": t.TempDir(), "approvalPolicy": "never", "sandbox": "read-only"})
			mark := a.mark()
			start := time.Now()
			a.startTurn(thread, "hi", nil)
			done := a.expectMethod("turn/completed", 60*time.Second)
			if got := field(done.Params, "turn.status"); got != "failed" {
				t.Fatalf("turn status %q, want failed", got)
			}
			if got := field(done.Params, "turn.error.message"); got != c.wantError {
				t.Errorf("turn error %q, want %q", got, c.wantError)
			}
			if got := field(done.Params, "turn.error.codexErrorInfo"); got != c.wantInfo {
				t.Errorf("codexErrorInfo %s, want %s", got, c.wantInfo)
			}
			var retrying []string
			var final int
			for _, m := range a.since(mark) {
				if m.Method != "error" {
					continue
				}
				if field(m.Params, "willRetry") == "true" {
					retrying = append(retrying, field(m.Params, "error.message"))
				} else {
					final++
				}
			}
			if want := c.requests - 1; len(retrying) != want || final != 1 {
				t.Errorf("error notifications: retrying %q, final %d; want %d and 1", retrying, final, want)
			}
			for i, msg := range retrying {
				if want := "Reconnecting... " + strconv.Itoa(i+1) + "/" + strconv.Itoa(c.requests-1); msg != want {
					t.Errorf("retry notification %q, want %q", msg, want)
				}
			}
			reqs := srv.Requests()
			if len(reqs) != c.requests {
				t.Fatalf("%d requests, want %d", len(reqs), c.requests)
			}
			for i := 1; i < len(reqs); i++ {
				// retry-after: 1 is waited for.
				// retry-after is a floor; a loaded machine may take longer.
				if gap := reqs[i].Time.Sub(reqs[i-1].Time); gap < 900*time.Millisecond {
					t.Errorf("retry %d after %s, want at least 1s", i, gap)
				}
			}
			t.Logf("failed after %s", time.Since(start).Round(time.Millisecond))
		})
	}
}

// (g) Extra tools over MCP (streamable HTTP): the model finds them with
// tool_search (mcp__conch namespace); calls ask with
// mcpServer/elicitation/request unless the tool is read-only or the
// server's default_tools_approval_mode is "approve"; under "never" they
// are refused unless approved by that mode.
func TestCodexMCPTools(t *testing.T) {
	codexBin(t)
	for _, c := range []struct {
		name, policy, mode, action string
		wantAsk                    bool
		wantResult                 string
	}{
		{"untrusted-accept", "untrusted", "", "accept", true, "the user says yes"},
		{"on-request-decline", "on-request", "", "decline", true, "user rejected MCP tool call"},
		{"never", "never", "", "", false, "MCP tool call requires approval, but approval policy is never"},
		{"never-approve-mode", "never", "approve", "", false, "the user says yes"},
		{"untrusted-approve-mode", "untrusted", "approve", "", false, "the user says yes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mcp := newMCPServer(t,
				mcpTool{Name: "ask_user", Description: "Ask the Conch user a question.", Result: "the user says yes"},
				mcpTool{Name: "peek", Description: "Read-only peek.", Annotations: map[string]any{"readOnlyHint": true}, Result: "peeked"},
			)
			srv := newServer(t, func(turn modelserver.Turn) modelserver.Reply {
				switch len(turn.Results()) {
				case 0:
					return modelserver.Reply{Calls: []modelserver.Call{{ID: "call_search", Name: "tool_search", Args: json.RawMessage(`{"query":"ask the conch user","limit":5}`)}}}
				case 1:
					if !hasTool(turn, "mcp__conch__ask_user") {
						return modelserver.Reply{Text: "no ask_user tool"}
					}
					return modelserver.Reply{Calls: []modelserver.Call{{ID: "call_ask", Name: "mcp__conch__ask_user", Args: json.RawMessage(`{"text":"ok?"}`)}}}
				case 2:
					return modelserver.Reply{Calls: []modelserver.Call{{ID: "call_peek", Name: "mcp__conch__peek", Args: json.RawMessage(`{"text":"x"}`)}}}
				}
				return modelserver.Reply{Text: "Done."}
			})
			cfg := "\n[mcp_servers.conch]\nurl = \"" + mcp.URL + "/mcp\"\n"
			if c.mode != "" {
				cfg += "default_tools_approval_mode = \"" + c.mode + "\"\n"
			}
			a := startCodex(t, srv.BaseURL(), options{config: cfg})
			a.handshake()
			thread, _ := a.startThread(map[string]any{"cwd": t.TempDir(), "approvalPolicy": c.policy, "sandbox": "workspace-write"})
			a.startTurn(thread, "ask the user", nil)
			var asked []msg
			for {
				m := a.nextRequestOrEnd(60 * time.Second)
				if m.Method == "turn/completed" {
					break
				}
				asked = append(asked, m)
				if m.Method != "mcpServer/elicitation/request" {
					t.Fatalf("server request %s %s", m.Method, m.Params)
				}
				res := map[string]any{"action": c.action, "content": nil, "_meta": nil}
				if c.action == "accept" {
					res["content"] = map[string]any{}
				}
				a.respond(m.ID, res)
			}
			if c.wantAsk {
				if len(asked) != 1 {
					t.Fatalf("%d elicitations, want 1 (for ask_user only)", len(asked))
				}
				p := asked[0].Params
				if field(p, "serverName") != "conch" || field(p, "_meta.codex_approval_kind") != "mcp_tool_call" ||
					field(p, "_meta.tool_name") != "ask_user" || field(p, "message") != `Allow the conch MCP server to run tool "ask_user"?` {
					t.Errorf("elicitation params %s", p)
				}
			} else if len(asked) != 0 {
				t.Errorf("%d elicitations, want none", len(asked))
			}
			turns := srv.Turns()
			if len(turns) < 3 {
				t.Fatalf("%d model requests, want 4", len(turns))
			}
			if hasTool(turns[0], "mcp__conch__ask_user") {
				t.Errorf("the MCP tool was offered before tool_search")
			}
			var ask string
			for _, r := range turns[2].Results() {
				if r.CallID == "call_ask" {
					ask = r.Text
				}
			}
			if !strings.Contains(ask, c.wantResult) {
				t.Errorf("the model saw %q for ask_user, want %q", ask, c.wantResult)
			}
			calls := mcp.Calls()
			wantCalls := 2
			if c.wantResult != "the user says yes" {
				wantCalls = 1 // peek only
			}
			if len(calls) != wantCalls {
				t.Errorf("%d tools/call at the MCP server, want %d: %s", len(calls), wantCalls, calls)
			}
		})
	}
}

// (g) An MCP server Codex starts itself (command, stdio): the test
// binary, serving ask_user.
func TestCodexMCPStdio(t *testing.T) {
	codexBin(t)
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	srv := newServer(t, func(turn modelserver.Turn) modelserver.Reply {
		switch len(turn.Results()) {
		case 0:
			return modelserver.Reply{Calls: []modelserver.Call{Search("call_search", "ask the conch user")}}
		case 1:
			if !hasTool(turn, "mcp__conch__ask_user") {
				return modelserver.Reply{Text: "no ask_user tool"}
			}
			return modelserver.Reply{Calls: []modelserver.Call{{ID: "call_ask", Name: "mcp__conch__ask_user", Args: json.RawMessage(`{"text":"ok?"}`)}}}
		}
		return modelserver.Reply{Text: "Done."}
	})
	cfg := "\n[mcp_servers.conch]\ncommand = " + strconv.Quote(self) + "\nargs = []\ndefault_tools_approval_mode = \"approve\"\n" +
		"[mcp_servers.conch.env]\n" + stdioMCPEnv + " = \"1\"\n"
	a := startCodex(t, srv.BaseURL(), options{config: cfg})
	a.handshake()
	thread, _ := a.startThread(map[string]any{"cwd": t.TempDir(), "approvalPolicy": "untrusted", "sandbox": "workspace-write"})
	a.startTurn(thread, "ask the user", nil)
	if m := a.nextRequestOrEnd(60 * time.Second); m.Method != "turn/completed" {
		t.Fatalf("got %s %s, want no server request", m.Method, m.Params)
	}
	if res := lastResult(t, srv); res.CallID != "call_ask" || !strings.Contains(res.Text, stdioMCPResult) {
		t.Errorf("the model saw %s %q", res.CallID, res.Text)
	}
}

// Readiness: `codex login status` says "Not logged in" (exit 1) though
// the env_key provider works; modelProvider/list names the env var to
// check, and a turn without it fails at once.
func TestCodexReadiness(t *testing.T) {
	bin := codexBin(t)
	srv := newServer(t, func(modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "hi"} })
	a := startCodex(t, srv.BaseURL(), options{})

	ctx := withTimeout(t, 30*time.Second)
	cmd := exec.CommandContext(ctx, bin, "login", "status")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CODEX_HOME=" + a.home, "HOME=" + t.TempDir(), testKeyEnv + "=sk-conch-test", "TMPDIR=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || strings.TrimSpace(string(out)) != "Not logged in" {
		t.Errorf("codex login status: %q %v; want \"Not logged in\", exit 1", out, err)
	}

	a.handshake()
	res := a.mustCall("account/read", map[string]any{}, 30*time.Second)
	if field(res, "account") != "" || field(res, "requiresOpenaiAuth") != "false" {
		t.Errorf("account/read %s", res)
	}
	res = a.mustCall("getAuthStatus", map[string]any{"includeToken": false, "refreshToken": false}, 30*time.Second)
	if field(res, "authMethod") != "" || field(res, "requiresOpenaiAuth") != "false" {
		t.Errorf("getAuthStatus %s", res)
	}
	res = a.mustCall("modelProvider/list", map[string]any{}, 30*time.Second)
	var list struct {
		Data []struct {
			ID       string `json:"id"`
			BaseURL  string `json:"baseUrl"`
			Settings struct {
				Type string `json:"type"`
				Auth struct {
					Mode   string `json:"mode"`
					EnvKey string `json:"envKey"`
				} `json:"auth"`
			} `json:"settings"`
		} `json:"data"`
		DefaultProviderID string `json:"defaultProviderId"`
	}
	json.Unmarshal(res, &list)
	var ok bool
	for _, p := range list.Data {
		if p.ID == list.DefaultProviderID {
			ok = p.ID == "conch" && p.BaseURL == srv.BaseURL() && p.Settings.Auth.Mode == "environmentVariable" && p.Settings.Auth.EnvKey == testKeyEnv
		}
	}
	if !ok {
		t.Errorf("modelProvider/list %s", res)
	}

	// Without the key.
	b := startCodex(t, srv.BaseURL(), options{env: map[string]string{testKeyEnv: ""}})
	b.handshake()
	thread, _ := b.startThread(map[string]any{"cwd": t.TempDir(), "approvalPolicy": "never", "sandbox": "read-only"})
	b.startTurn(thread, "hi", nil)
	done := b.expectMethod("turn/completed", 60*time.Second)
	if got := field(done.Params, "turn.error.message"); field(done.Params, "turn.status") != "failed" || got != "Missing environment variable: `CONCH_TEST_KEY`." {
		t.Errorf("turn without the key: %s", done.Params)
	}
	if n := len(srv.Turns()); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
}
