package responses

// Tests that run the real `codex app-server` against the scripted
// Responses server. Set CONCH_CODEX_CAPTURE=dir to keep each test's
// JSON-RPC transcript (dir/TestName.jsonl) and stderr.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/internal/modelserver"
)

func TestCodexTextReply(t *testing.T) {
	codexBin(t)
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Hello from the scripted model."}
	})
	a := startCodex(t, srv.BaseURL(), options{})
	init := a.handshake()
	t.Logf("initialize: %s", init)
	cwd := t.TempDir()
	thread, res := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": "on-request", "sandbox": "workspace-write"})
	t.Logf("thread/start: %s", res)
	turn := a.startTurn(thread, "say hello", nil)
	done := a.expectMethod("turn/completed", 60*time.Second)
	t.Logf("turn %s completed: %s", turn, done.Params)
	t.Logf("paths: %q", srv.Paths())
	_ = strings.Contains
	_ = json.Valid
}

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

func TestCodexExploreApproval(t *testing.T) {
	codexBin(t)
	srv := New(t, script(
		modelserver.Reply{Text: "I will create the file.", Calls: []modelserver.Call{Exec("call_make", "printf hi > made.txt")}},
		modelserver.Reply{Text: "Done."},
	))
	a := startCodex(t, srv.BaseURL(), options{})
	a.handshake()
	cwd := t.TempDir()
	thread, _ := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": "untrusted", "sandbox": "workspace-write"})
	a.startTurn(thread, "make a file", nil)
	req := a.expect("approval request", 60*time.Second, func(m msg) bool { return m.ID != nil && m.Method != "" })
	t.Logf("server request: %s %s", req.Method, req.Params)
	a.respond(req.ID, map[string]any{"decision": "accept"})
	done := a.expectMethod("turn/completed", 60*time.Second)
	t.Logf("completed: %s", done.Params)
	for i, raw := range srv.RawTurns() {
		var r struct {
			Input []json.RawMessage `json:"input"`
		}
		json.Unmarshal(raw, &r)
		for _, it := range r.Input {
			if !strings.Contains(string(it), `"role":"developer"`) {
				t.Logf("req %d: %s", i, it)
			}
		}
	}
}

func TestCodexExploreDecisions(t *testing.T) {
	codexBin(t)
	for _, c := range []struct {
		name, policy string
		call         modelserver.Call
		decision     any
	}{
		{"untrusted-decline", "untrusted", Exec("call_make", "printf hi > made.txt"), "decline"},
		{"untrusted-cancel", "untrusted", Exec("call_make", "printf hi > made.txt"), "cancel"},
		{"untrusted-session", "untrusted", Exec("call_make", "printf hi > made.txt"), "acceptForSession"},
		{"onrequest-escalate", "on-request", modelserver.Call{ID: "call_make", Name: "exec_command", Args: json.RawMessage(`{"cmd":"printf hi > made.txt","sandbox_permissions":"require_escalated","justification":"May I write made.txt?"}`)}, "decline"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := New(t, script(
				modelserver.Reply{Calls: []modelserver.Call{c.call}},
				modelserver.Reply{Text: "Done."},
			))
			a := startCodex(t, srv.BaseURL(), options{})
			a.handshake()
			cwd := t.TempDir()
			thread, _ := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": c.policy, "sandbox": "workspace-write"})
			a.startTurn(thread, "make a file", nil)
			req := a.expect("approval request", 60*time.Second, func(m msg) bool { return m.ID != nil && m.Method != "" })
			t.Logf("server request: %s %s", req.Method, req.Params)
			a.respond(req.ID, map[string]any{"decision": c.decision})
			done := a.expectMethod("turn/completed", 60*time.Second)
			t.Logf("completed: %s", done.Params)
			for i, turn := range srv.Turns() {
				for _, r := range turn.Results() {
					t.Logf("req %d result %s: %q", i, r.CallID, r.Text)
				}
			}
			_, err := os.Stat(filepath.Join(cwd, "made.txt"))
			t.Logf("file exists: %v; requests: %d", err == nil, len(srv.Turns()))
		})
	}
}

func TestCodexExplorePatch(t *testing.T) {
	codexBin(t)
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hello patch\n*** End Patch\n"
	for _, c := range []struct{ policy, sandbox string }{
		{"untrusted", "workspace-write"},
		{"on-request", "workspace-write"},
		{"on-request", "read-only"},
		{"never", "read-only"},
	} {
		t.Run(c.policy+"-"+c.sandbox, func(t *testing.T) {
			srv := New(t, script(
				modelserver.Reply{Calls: []modelserver.Call{Patch("call_patch", patch)}},
				modelserver.Reply{Text: "Done."},
			))
			a := startCodex(t, srv.BaseURL(), options{})
			a.handshake()
			cwd := t.TempDir()
			thread, _ := a.startThread(map[string]any{"cwd": cwd, "approvalPolicy": c.policy, "sandbox": c.sandbox})
			a.startTurn(thread, "make a file", nil)
			m := a.expect("approval or end", 60*time.Second, func(m msg) bool {
				return (m.ID != nil && m.Method != "") || m.Method == "turn/completed"
			})
			if m.Method != "turn/completed" {
				t.Logf("server request: %s %s", m.Method, m.Params)
				a.respond(m.ID, map[string]any{"decision": "accept"})
				m = a.expectMethod("turn/completed", 60*time.Second)
			}
			t.Logf("completed: %s", m.Params)
			for i, turn := range srv.Turns() {
				for _, r := range turn.Results() {
					t.Logf("req %d result %s: %q", i, r.CallID, r.Text)
				}
			}
			_, err := os.Stat(filepath.Join(cwd, "hello.txt"))
			t.Logf("file exists: %v; requests: %d", err == nil, len(srv.Turns()))
		})
	}
}
