//go:build unix

package gemini

// These tests run the real Gemini CLI in ACP mode (`gemini --acp`,
// JSON-RPC 2.0 over stdio, one JSON object a line) against the scripted
// Server, and pin down how it behaves: the handshake, the session/update
// stream, the permission contract, cancel, the process tree of its shell
// commands, signals, rate limits, MCP servers and folder trust. They are
// skipped when there is no CLI (see geminiBinary). docs/agents/gemini.md
// is written from what they capture: run them with
// CONCH_GEMINI_DUMPDIR=/some/dir to get every ACP transcript and request
// body, or CONCH_GEMINI_DUMP=1 to log the transcripts.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conch/backend/testrig/modelserver"
)

// TestExplore runs one plain prompt and logs everything (CONCH_EXPLORE=1;
// CONCH_EXPLORE_SETTINGS is a settings.json to use instead of the base).
func TestExplore(t *testing.T) {
	if os.Getenv("CONCH_EXPLORE") == "" {
		t.Skip("set CONCH_EXPLORE=1")
	}
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Hello from the scripted model."}
	})
	o := acpOpts{}
	if js := os.Getenv("CONCH_EXPLORE_SETTINGS"); js != "" {
		json.Unmarshal([]byte(js), &o.settings)
	}
	r := startACP(t, srv, o)
	r.initialize(nil)
	sid := r.newSession(nil)
	m := r.call("session/prompt", textPrompt(sid, "Say hello."), 90*time.Second)
	t.Logf("prompt result: %s %v", m.Result, m.Error)
	r.stdin.Close()
	t.Logf("exited after stdin close: %v (%v)", r.exited(20*time.Second), r.exitErr)
	t.Logf("transcript:\n%s\nstderr:\n%s", r.transcript(), r.stderrText())
	for _, p := range srv.Paths() {
		t.Logf("path: %s", p)
	}
	dump(t, r, srv)
}

// last is a turn's last message.
func last(turn modelserver.Turn) modelserver.Message {
	if len(turn.Messages) == 0 {
		return modelserver.Message{}
	}
	return turn.Messages[len(turn.Messages)-1]
}

// lastUser is the text of a turn's last user message.
func lastUser(turn modelserver.Turn) string {
	for i := len(turn.Messages) - 1; i >= 0; i-- {
		if turn.Messages[i].Role == "user" {
			return turn.Messages[i].Text
		}
	}
	return ""
}

func shellCall(id, command string) modelserver.Call {
	args, _ := json.Marshal(map[string]any{"command": command, "description": "scripted: " + command})
	return modelserver.Call{ID: id, Name: "run_shell_command", Args: args}
}

func writeCall(path, content string) modelserver.Call {
	args, _ := json.Marshal(map[string]any{"file_path": path, "content": content})
	return modelserver.Call{Name: "write_file", Args: args}
}

// selected is the session/request_permission result that picks optionID.
func selected(optionID string) map[string]any {
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": optionID}}
}

func allowOnce(method string, params json.RawMessage) (any, *rpcError) {
	if method == "session/request_permission" {
		return selected("proceed_once"), nil
	}
	return nil, &rpcError{Code: -32601, Message: "method not found: " + method}
}

// permissionParams are the params of a session/request_permission.
type permissionParams struct {
	SessionID string `json:"sessionId"`
	Options   []struct {
		OptionID string `json:"optionId"`
		Name     string `json:"name"`
		Kind     string `json:"kind"`
	} `json:"options"`
	ToolCall struct {
		ToolCallID string          `json:"toolCallId"`
		Status     string          `json:"status"`
		Title      string          `json:"title"`
		Kind       string          `json:"kind"`
		Content    json.RawMessage `json:"content"`
		Locations  json.RawMessage `json:"locations"`
	} `json:"toolCall"`
}

func (p permissionParams) optionIDs() []string {
	var out []string
	for _, o := range p.Options {
		out = append(out, o.OptionID+"/"+o.Kind)
	}
	return out
}

// recorder answers the agent's requests with answer and keeps them.
type recorder struct {
	mu     sync.Mutex
	asked  []rpcMsg
	answer func(method string, params json.RawMessage) (any, *rpcError)
}

func (c *recorder) handle(method string, params json.RawMessage) (any, *rpcError) {
	c.mu.Lock()
	c.asked = append(c.asked, rpcMsg{Method: method, Params: params})
	c.mu.Unlock()
	return c.answer(method, params)
}

func (c *recorder) permissions() []permissionParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []permissionParams
	for _, m := range c.asked {
		if m.Method == "session/request_permission" {
			var p permissionParams
			json.Unmarshal(m.Params, &p)
			out = append(out, p)
		}
	}
	return out
}

func (c *recorder) methods() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.asked {
		out = append(out, m.Method)
	}
	return out
}

// sessionResult is the result of session/new.
type sessionResult struct {
	SessionID string `json:"sessionId"`
	Modes     struct {
		AvailableModes []struct {
			ID string `json:"id"`
		} `json:"availableModes"`
		CurrentModeID string `json:"currentModeId"`
	} `json:"modes"`
	Models struct {
		AvailableModels []struct {
			ModelID string `json:"modelId"`
		} `json:"availableModels"`
		CurrentModelID string `json:"currentModelId"`
	} `json:"models"`
}

func (r *acpRun) newSessionResult(mcpServers []any) (sessionResult, *rpcError) {
	r.t.Helper()
	if mcpServers == nil {
		mcpServers = []any{}
	}
	m := r.call("session/new", map[string]any{"cwd": r.dir, "mcpServers": mcpServers}, 60*time.Second)
	var res sessionResult
	json.Unmarshal(m.Result, &res)
	return res, m.Error
}

type promptResult struct {
	StopReason string `json:"stopReason"`
	Meta       struct {
		Quota struct {
			TokenCount struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			} `json:"token_count"`
			ModelUsage []struct {
				Model string `json:"model"`
			} `json:"model_usage"`
		} `json:"quota"`
	} `json:"_meta"`
}

func (r *acpRun) prompt(sid, text string, timeout time.Duration) (promptResult, *rpcError) {
	r.t.Helper()
	m := r.call("session/prompt", textPrompt(sid, text), timeout)
	var res promptResult
	json.Unmarshal(m.Result, &res)
	return res, m.Error
}

func marker(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), time.Now().UnixNano())
}

// TestGeminiHandshake: initialize, no authenticate, session/new, and the
// CLI ending when its stdin closes.
func TestGeminiHandshake(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Hello."}
	})
	r := startACP(t, srv, acpOpts{})
	init := r.initialize(nil)
	var ir struct {
		ProtocolVersion int `json:"protocolVersion"`
		AuthMethods     []struct {
			ID string `json:"id"`
		} `json:"authMethods"`
		AgentInfo struct {
			Name, Version string
		} `json:"agentInfo"`
		AgentCapabilities struct {
			LoadSession        bool `json:"loadSession"`
			PromptCapabilities struct {
				Image, Audio, EmbeddedContext bool
			} `json:"promptCapabilities"`
			McpCapabilities struct {
				HTTP bool `json:"http"`
				SSE  bool `json:"sse"`
			} `json:"mcpCapabilities"`
		} `json:"agentCapabilities"`
	}
	json.Unmarshal(init.Result, &ir)
	var ids []string
	for _, a := range ir.AuthMethods {
		ids = append(ids, a.ID)
	}
	if ir.ProtocolVersion != 1 || ir.AgentInfo.Name != "gemini-cli" || !ir.AgentCapabilities.LoadSession ||
		!ir.AgentCapabilities.McpCapabilities.HTTP || !ir.AgentCapabilities.McpCapabilities.SSE {
		t.Errorf("initialize result: %s", init.Result)
	}
	if strings.Join(ids, ",") != "oauth-personal,gemini-api-key,vertex-ai,gateway" {
		t.Errorf("authMethods = %v", ids)
	}
	t.Logf("initialize result: %s", init.Result)

	// No authenticate: with GOOGLE_GEMINI_BASE_URL set, session/new takes
	// the "gateway" auth type and GEMINI_API_KEY.
	from := r.logLen()
	res, rerr := r.newSessionResult(nil)
	if rerr != nil {
		t.Fatalf("session/new: %v", rerr)
	}
	var modes []string
	for _, m := range res.Modes.AvailableModes {
		modes = append(modes, m.ID)
	}
	if strings.Join(modes, ",") != "default,autoEdit,yolo,plan" || res.Modes.CurrentModeID != "default" ||
		res.Models.CurrentModelID != testModel {
		t.Errorf("session/new result: %s", jsonString(res))
	}
	// available_commands_update follows session/new on its own.
	r.waitFor(from, 10*time.Second, "available_commands_update", isUpdate("available_commands_update"))

	pr, perr := r.prompt(res.SessionID, "Say hello.", 60*time.Second)
	if perr != nil || pr.StopReason != "end_turn" {
		t.Errorf("prompt: %+v %v", pr, perr)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Action != "streamGenerateContent" || reqs[0].Query != "alt=sse" ||
		reqs[0].Header.Get("x-goog-api-key") != "test" {
		t.Errorf("requests: %v key=%q", srv.Paths(), reqs[0].Header.Get("x-goog-api-key"))
	}
	t.Logf("request headers: %v", reqs[0].Header)

	// Closing stdin ends the CLI, with status 0.
	r.stdin.Close()
	if !r.exited(20 * time.Second) {
		t.Fatalf("gemini still running 20s after its stdin closed")
	}
	if r.exitErr != nil {
		t.Errorf("exit after stdin EOF: %v", r.exitErr)
	}
	dump(t, r, srv)
}

// TestGeminiAuthenticate: which authenticate calls work with an API key.
func TestGeminiAuthenticate(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "hi"} })
	t.Run("gemini-api-key", func(t *testing.T) {
		n := len(srv.Requests())
		r := startACP(t, srv, acpOpts{})
		r.initialize(nil)
		a := r.call("authenticate", map[string]any{"methodId": "gemini-api-key", "_meta": map[string]any{"api-key": "key-from-acp"}}, 30*time.Second)
		if a.Error != nil || string(a.Result) != "{}" {
			t.Fatalf("authenticate: %s %v", a.Result, a.Error)
		}
		// authenticate writes the method into the user's settings.json.
		b, _ := os.ReadFile(filepath.Join(r.home, ".gemini", "settings.json"))
		var s struct {
			Security struct{ Auth struct{ SelectedType string } }
		}
		json.Unmarshal(b, &s)
		if s.Security.Auth.SelectedType != "gemini-api-key" {
			t.Errorf("settings.json after authenticate: %s", b)
		}
		res, rerr := r.newSessionResult(nil)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if _, perr := r.prompt(res.SessionID, "hi", 60*time.Second); perr != nil {
			t.Fatal(perr)
		}
		if q := srv.Requests()[n:]; len(q) != 1 || q[0].Header.Get("x-goog-api-key") != "key-from-acp" {
			t.Errorf("the key of the request is %q, want the authenticate one", q[0].Header.Get("x-goog-api-key"))
		}
		dump(t, r, nil)
	})
	t.Run("gateway-meta", func(t *testing.T) {
		// No GOOGLE_GEMINI_BASE_URL and no GEMINI_API_KEY: the base URL comes
		// in authenticate's _meta.gateway.
		n := len(srv.Requests())
		r := startACP(t, srv, acpOpts{env: []string{"GOOGLE_GEMINI_BASE_URL=", "GEMINI_API_KEY="}})
		r.initialize(nil)
		a := r.call("authenticate", map[string]any{"methodId": "gateway", "_meta": map[string]any{
			"gateway": map[string]any{"baseUrl": srv.URL, "headers": map[string]any{"X-Conch": "yes"}}}}, 30*time.Second)
		if a.Error != nil {
			t.Fatalf("authenticate: %v", a.Error)
		}
		res, rerr := r.newSessionResult(nil)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if _, perr := r.prompt(res.SessionID, "hi", 60*time.Second); perr != nil {
			t.Fatal(perr)
		}
		q := srv.Requests()[n:]
		if len(q) != 1 || q[0].Header.Get("X-Conch") != "yes" {
			t.Errorf("requests %v, X-Conch=%q", srv.Paths(), q[0].Header.Get("X-Conch"))
		}
		t.Logf("x-goog-api-key=%q", q[0].Header.Get("x-goog-api-key"))
	})
	t.Run("no-key", func(t *testing.T) {
		r := startACP(t, srv, acpOpts{env: []string{"GOOGLE_GEMINI_BASE_URL=", "GEMINI_API_KEY="}})
		r.initialize(nil)
		_, rerr := r.newSessionResult(nil)
		if rerr == nil || rerr.Code != -32000 || rerr.Message != "Gemini API key is missing or not configured." {
			t.Errorf("session/new without a key: %v", rerr)
		}
	})
}

// TestGeminiText: text replies as agent_message_chunk, thoughts as
// agent_thought_chunk, and how the request decodes.
func TestGeminiText(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		switch {
		case lastUser(turn) == "Think first.":
			return modelserver.Reply{Body: SSE(
				Chunk("", ThoughtPart("**Planning the answer**\n\nI will greet.")),
				Chunk("", TextPart("Hel")),
				Chunk("STOP", TextPart("lo.")),
			)}
		case lastUser(turn) == "List the files." && last(turn).Role != "tool":
			return modelserver.Reply{Text: "First.", Calls: []modelserver.Call{
				{ID: "call-1", Name: "list_directory", Args: json.RawMessage(`{"dir_path":"."}`)}}}
		case last(turn).Role == "tool":
			return modelserver.Reply{Text: "Second."}
		}
		return modelserver.Reply{Text: "Hello from the scripted model."}
	})
	r := startACP(t, srv, acpOpts{})
	r.initialize(nil)
	sid := r.newSession(nil)

	t.Run("plain", func(t *testing.T) {
		from := r.logLen()
		pr, perr := r.prompt(sid, "Say hello.", 60*time.Second)
		if perr != nil || pr.StopReason != "end_turn" || pr.Meta.Quota.TokenCount.InputTokens != 10 ||
			pr.Meta.Quota.TokenCount.OutputTokens != 5 || len(pr.Meta.Quota.ModelUsage) != 1 ||
			pr.Meta.Quota.ModelUsage[0].Model != testModel {
			t.Errorf("prompt: %+v %v", pr, perr)
		}
		us := updates(r.messages(from))
		text, n := chunkText(us, "agent_message_chunk")
		if text != "Hello from the scripted model." || n != 3 {
			t.Errorf("agent_message_chunk text %q in %d chunks, want the reply in 3", text, n)
		}
		turn := srv.Turns()[0]
		if turn.Model != testModel || turn.FirstUser() != "Say hello." || len(turn.Messages) != 1 ||
			!strings.Contains(turn.System, "interactive CLI agent") || !strings.Contains(turn.System, "<session_context>") {
			t.Errorf("turn: model=%q messages=%s system[:80]=%q", turn.Model, jsonString(turn.Messages), turn.System[:min(80, len(turn.System))])
		}
		for _, tool := range []string{"run_shell_command", "write_file", "read_file", "replace", "list_directory"} {
			if !contains(turn.Tools, tool) {
				t.Errorf("tool %s not offered: %v", tool, turn.Tools)
			}
		}
		t.Logf("tools offered: %v", turn.Tools)
	})
	t.Run("thought", func(t *testing.T) {
		from := r.logLen()
		if pr, perr := r.prompt(sid, "Think first.", 60*time.Second); perr != nil || pr.StopReason != "end_turn" {
			t.Fatalf("prompt: %+v %v", pr, perr)
		}
		us := updates(r.messages(from))
		thought, _ := chunkText(us, "agent_thought_chunk")
		text, _ := chunkText(us, "agent_message_chunk")
		// **subject** and description, joined by one newline.
		if thought != "**Planning the answer**\nI will greet." || text != "Hello." {
			t.Errorf("thought %q, text %q", thought, text)
		}
		if us[0].SessionUpdate != "agent_thought_chunk" {
			t.Errorf("first update %s, want the thought", us[0].SessionUpdate)
		}
		// Thoughts are not sent back in the history.
		turns := srv.Turns()
		next := turns[len(turns)-1]
		if m := next.Messages[len(next.Messages)-1]; m.Role != "user" || m.Text != "Think first." {
			t.Errorf("last message %+v", m)
		}
	})
	t.Run("two-messages", func(t *testing.T) {
		// Text, a tool call, then more text in one prompt: the chunks of the
		// two messages come with no separator between them, only the tool
		// updates.
		from := r.logLen()
		if pr, perr := r.prompt(sid, "List the files.", 60*time.Second); perr != nil || pr.StopReason != "end_turn" {
			t.Fatalf("prompt: %+v %v", pr, perr)
		}
		us := updates(r.messages(from))
		text, _ := chunkText(us, "agent_message_chunk")
		if text != "First.Second." {
			t.Errorf("agent_message_chunk text %q, want %q", text, "First.Second.")
		}
		var seq []string
		for _, u := range us {
			if u.SessionUpdate == "tool_call" || u.SessionUpdate == "tool_call_update" {
				seq = append(seq, u.SessionUpdate+":"+u.Status+":"+u.ToolCallID+":"+u.Kind)
			}
		}
		// A tool that needs no permission announces itself with tool_call;
		// the toolCallId is "<tool name>__<the model's call id>".
		want := []string{"tool_call:in_progress:list_directory__call-1:search", "tool_call_update:completed:list_directory__call-1:search"}
		if strings.Join(seq, " ") != strings.Join(want, " ") {
			t.Errorf("tool updates %v, want %v", seq, want)
		}
		turns := srv.Turns()
		res := turns[len(turns)-1].Results()
		if len(res) != 1 || res[0].CallID != "call-1" || !strings.Contains(res[0].Text, "is empty") {
			t.Errorf("tool results %s", jsonString(res))
		}
	})
	dump(t, r, srv)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestGeminiShellPermission: the model runs a shell command that makes a
// file; in the default approval mode the CLI asks the client first.
func TestGeminiShellPermission(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer any
		ran    bool
	}{
		{"allow_once", selected("proceed_once"), true},
		{"allow_always", selected("proceed_always"), true},
		{"reject", selected("cancel"), false},
		{"outcome_cancelled", map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
				switch len(turn.Results()) {
				case 0:
					return modelserver.Reply{Calls: []modelserver.Call{shellCall("", "echo made > created.txt && echo made-it")}}
				case 1:
					// a second command, to see whether "allow always" asks again
					return modelserver.Reply{Calls: []modelserver.Call{shellCall("", "echo again >> created.txt")}}
				}
				return modelserver.Reply{Text: "The commands ran."}
			})
			r := startACP(t, srv, acpOpts{})
			rec := &recorder{answer: func(string, json.RawMessage) (any, *rpcError) { return tc.answer, nil }}
			r.onRequest = rec.handle
			r.initialize(nil)
			sid := r.newSession(nil)
			from := r.logLen()
			pr, perr := r.prompt(sid, "Make a file.", 60*time.Second)
			if perr != nil || pr.StopReason != "end_turn" {
				t.Fatalf("prompt: %+v %v", pr, perr)
			}
			perms := rec.permissions()
			wantAsks := 2
			if tc.name == "allow_always" {
				wantAsks = 1 // the second command of the session is not asked
			}
			if len(perms) != wantAsks {
				t.Fatalf("%d permission requests, want %d: %s", len(perms), wantAsks, jsonString(perms))
			}
			p := perms[0]
			if p.SessionID != sid || p.ToolCall.Status != "pending" || p.ToolCall.Kind != "execute" ||
				p.ToolCall.Title != "echo made > created.txt && echo made-it" ||
				!strings.HasPrefix(p.ToolCall.ToolCallID, "run_shell_command__run_shell_command_") ||
				strings.Join(p.optionIDs(), " ") != "proceed_always/allow_always proceed_once/allow_once cancel/reject_once" {
				t.Errorf("permission request: %s", jsonString(p))
			}
			b, err := os.ReadFile(filepath.Join(r.dir, "created.txt"))
			if ran := err == nil; ran != tc.ran {
				t.Errorf("file made: %v, want %v", ran, tc.ran)
			}
			if tc.ran && string(b) != "made\nagain\n" {
				t.Errorf("created.txt = %q", b)
			}
			us := updates(r.messages(from))
			var toolUpdates []update
			for _, u := range us {
				if strings.HasPrefix(u.SessionUpdate, "tool_call") {
					toolUpdates = append(toolUpdates, u)
				}
			}
			results := srv.Turns()[1].Results()
			if tc.ran {
				// Asked and allowed: no tool_call, only tool_call_update completed;
				// the command's output is not in its content, only in what the
				// model gets.
				wantUpdates := 2
				if tc.name == "allow_always" {
					wantUpdates = 3 // the second command gets tool_call, then tool_call_update
				}
				if len(toolUpdates) != wantUpdates || toolUpdates[0].SessionUpdate != "tool_call_update" ||
					toolUpdates[0].Status != "completed" || toolUpdates[0].ToolCallID != p.ToolCall.ToolCallID ||
					string(toolUpdates[0].Content) != "[]" {
					t.Errorf("tool updates: %s", jsonString(toolUpdates))
				}
				if tc.name == "allow_always" && (toolUpdates[1].SessionUpdate != "tool_call" || toolUpdates[1].Status != "in_progress") {
					t.Errorf("the allowed-always second command: %s", jsonString(toolUpdates[1]))
				}
				if len(results) != 1 || !strings.Contains(results[0].Text, "Output: made-it") ||
					!strings.Contains(results[0].Text, "Process Group PGID:") {
					t.Errorf("functionResponse: %s", jsonString(results))
				}
			} else {
				// Rejected: no tool update at all; the model is told and the turn
				// goes on.
				if len(toolUpdates) != 0 {
					t.Errorf("tool updates after a reject: %s", jsonString(toolUpdates))
				}
				if len(results) != 1 || results[0].Text != `Tool "run_shell_command" was canceled by the user.` {
					t.Errorf("functionResponse: %s", jsonString(results))
				}
			}
			t.Logf("functionResponse: %q", results[0].Text)
			dump(t, r, srv)
		})
	}
}

// TestGeminiApprovalModes: which tool calls ask in each --approval-mode,
// and session/set_mode.
func TestGeminiApprovalModes(t *testing.T) {
	for _, tc := range []struct {
		mode, modeID string
		// asked are the tools that ask permission; ran the files made.
		asked, ran string
	}{
		{"default", "default", "write_file run_shell_command", "written shell"},
		{"auto_edit", "autoEdit", "run_shell_command", "written shell"},
		{"yolo", "yolo", "", "written shell"},
		{"plan", "plan", "", ""},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var dir string
			srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
				switch len(turn.Results()) {
				case 0:
					return modelserver.Reply{Calls: []modelserver.Call{writeCall(filepath.Join(dir, "written.txt"), "hello\n")}}
				case 1:
					return modelserver.Reply{Calls: []modelserver.Call{shellCall("", "echo ran > shell.txt")}}
				}
				return modelserver.Reply{Text: "done"}
			})
			r := startACP(t, srv, acpOpts{args: []string{"--approval-mode", tc.mode}})
			dir = r.dir
			rec := &recorder{answer: allowOnce}
			r.onRequest = rec.handle
			r.initialize(nil)
			res, rerr := r.newSessionResult(nil)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if res.Modes.CurrentModeID != tc.modeID {
				t.Errorf("currentModeId %q, want %q", res.Modes.CurrentModeID, tc.modeID)
			}
			if pr, perr := r.prompt(res.SessionID, "Write and run.", 60*time.Second); perr != nil || pr.StopReason != "end_turn" {
				t.Fatalf("prompt: %+v %v", pr, perr)
			}
			var asked []string
			for _, p := range rec.permissions() {
				asked = append(asked, strings.SplitN(p.ToolCall.ToolCallID, "__", 2)[0])
			}
			if strings.Join(asked, " ") != tc.asked {
				t.Errorf("asked for %v, want %q", asked, tc.asked)
			}
			var ran []string
			for _, f := range []string{"written", "shell"} {
				if _, err := os.Stat(filepath.Join(dir, f+".txt")); err == nil {
					ran = append(ran, f)
				}
			}
			if strings.Join(ran, " ") != tc.ran {
				t.Errorf("made %v, want %q", ran, tc.ran)
			}
			var results []string
			for _, m := range srv.Turns()[len(srv.Turns())-1].Results() {
				results = append(results, m.Text)
			}
			t.Logf("tools offered: %v", srv.Turns()[0].Tools)
			t.Logf("results: %q", results)
			if tc.mode == "plan" {
				if !contains(srv.Turns()[0].Tools, "exit_plan_mode") || contains(srv.Turns()[0].Tools, "run_shell_command") ||
					len(results) != 2 || !strings.HasPrefix(results[0], "Access denied: plan path") ||
					results[1] != `Tool "run_shell_command" not found in registry.` {
					t.Errorf("plan mode: tools %v results %q", srv.Turns()[0].Tools, results)
				}
			}
			dump(t, r, srv)
		})
	}
	t.Run("set_mode", func(t *testing.T) {
		srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
			if last(turn).Role == "tool" {
				return modelserver.Reply{Text: "done"}
			}
			return modelserver.Reply{Calls: []modelserver.Call{shellCall("", "echo ran >> shell.txt")}}
		})
		r := startACP(t, srv, acpOpts{})
		rec := &recorder{answer: allowOnce}
		r.onRequest = rec.handle
		r.initialize(nil)
		sid := r.newSession(nil)
		from := r.logLen()
		m := r.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "yolo"}, 30*time.Second)
		if m.Error != nil || string(m.Result) != "{}" {
			t.Fatalf("session/set_mode: %s %v", m.Result, m.Error)
		}
		// A mode change is announced as agent text, before the answer.
		if text, _ := chunkText(updates(r.messages(from)), "agent_message_chunk"); text != "[MODE_UPDATE] yolo" {
			t.Errorf("agent text around set_mode: %q", text)
		}
		if _, perr := r.prompt(sid, "Run.", 60*time.Second); perr != nil {
			t.Fatal(perr)
		}
		if n := len(rec.permissions()); n != 0 {
			t.Errorf("%d permission requests after set_mode yolo", n)
		}
		// the auto_edit mode is "autoEdit" here, as in session/new's modes;
		// the CLI flag's "auto_edit" is not a mode id.
		m = r.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto_edit"}, 30*time.Second)
		if m.Error == nil {
			t.Errorf("set_mode auto_edit: %s", m.Result)
		}
		t.Logf("set_mode auto_edit: %s", jsonString(m.Error))
		dump(t, r, srv)
	})
}

// sleepBrain asks to run `sleep 300`, then says it is done; a prompt
// "Again." gets a plain answer.
func sleepBrain(turn modelserver.Turn) modelserver.Reply {
	if lastUser(turn) == "Again." {
		return modelserver.Reply{Text: "Here again."}
	}
	if last(turn).Role == "tool" {
		return modelserver.Reply{Text: "The sleep ended."}
	}
	return modelserver.Reply{Calls: []modelserver.Call{shellCall("", "sleep 300")}}
}

// startSleep runs a CLI whose model runs `sleep 300` (allowed once), and
// gives the run, its session, the pending prompt and the sleep's process.
// Every process of the test carries CONCH_TEST_MARKER in its environment
// and is killed at the end of the test.
func startSleep(t *testing.T, o acpOpts) (*acpRun, *Server, string, chan rpcMsg, proc) {
	t.Helper()
	mark := marker(t)
	killMarked(t, "CONCH_TEST_MARKER", mark)
	srv := New(t, sleepBrain)
	o.env = append(o.env, "CONCH_TEST_MARKER="+mark)
	r := startACP(t, srv, o)
	if r.onRequest == nil {
		r.onRequest = allowOnce
	}
	r.initialize(nil)
	sid := r.newSession(nil)
	pending := r.send("session/prompt", textPrompt(sid, "Sleep a while."))
	sleep, ok := waitProc(30*time.Second, func() (proc, bool) {
		for _, p := range withEnv("CONCH_TEST_MARKER", mark) {
			if p.Comm == "sleep" {
				return p, true
			}
		}
		return proc{}, false
	})
	if !ok {
		t.Fatalf("no sleep process came\ntranscript:\n%s\nstderr:\n%s", r.transcript(), r.stderrText())
	}
	return r, srv, sid, pending, sleep
}

// TestGeminiCancel: session/cancel while a shell command runs.
func TestGeminiCancel(t *testing.T) {
	r, srv, sid, pending, sleep := startSleep(t, acpOpts{})
	from := r.logLen()
	r.notify("session/cancel", map[string]any{"sessionId": sid})
	m := r.await(pending, 30*time.Second, "the cancelled prompt")
	if m.Error != nil || string(m.Result) != `{"stopReason":"cancelled"}` {
		t.Errorf("prompt answer after cancel: %s %v", m.Result, m.Error)
	}
	after := r.messages(from)
	us := updates(after)
	if len(us) != 1 || us[0].SessionUpdate != "tool_call_update" || us[0].Status != "completed" ||
		!strings.Contains(string(us[0].Content), "Command cancelled by user.") {
		t.Errorf("updates after cancel: %s", jsonString(us))
	}
	if !waitGone(sleep.PID, 5*time.Second) {
		t.Errorf("sleep %d still runs after the cancel", sleep.PID)
	}
	if n := len(srv.Turns()); n != 1 {
		t.Errorf("%d model requests; the cancelled command's result should not be sent", n)
	}
	t.Logf("after cancel: %s", jsonString(after))

	// The session goes on. The cancelled call stays in the history with no
	// functionResponse after it: the next request has the model's
	// functionCall followed by the new user text.
	if pr, perr := r.prompt(sid, "Again.", 60*time.Second); perr != nil || pr.StopReason != "end_turn" {
		t.Errorf("prompt after cancel: %+v %v", pr, perr)
	}
	turns := srv.Turns()
	h := turns[len(turns)-1].Messages
	if len(h) != 3 || h[0].Text != "Sleep a while." || len(h[1].Calls) != 1 || h[1].Calls[0].Name != "run_shell_command" ||
		h[2].Role != "user" || h[2].Text != "Again." {
		t.Errorf("history after cancel: %s", jsonString(h))
	}
	t.Logf("history after cancel: %s", jsonString(h))

	// Cancel with nothing running: a notification, so no answer; nothing.
	from = r.logLen()
	r.notify("session/cancel", map[string]any{"sessionId": sid})
	time.Sleep(time.Second)
	if ms := r.messages(from); len(ms) != 0 {
		t.Errorf("after an idle cancel: %s", jsonString(ms))
	}
	dump(t, r, srv)
}

// TestGeminiProcessTree: where shell commands run (their session and
// process group) and what environment they get.
func TestGeminiProcessTree(t *testing.T) {
	for _, pty := range []bool{true, false} {
		t.Run(fmt.Sprintf("pty=%v", pty), func(t *testing.T) {
			s := baseSettings()
			if !pty {
				s["tools"] = map[string]any{"shell": map[string]any{"enableInteractiveShell": false}}
			}
			r, _, _, _, sleep := startSleep(t, acpOpts{settings: s})
			tree := descendants(r.cmd.Process.Pid)
			for _, p := range tree {
				t.Logf("tree: %s", p)
			}
			top := tree[0]
			// The CLI relaunches itself: the process we started waits for a
			// second node process (with GEMINI_CLI_NO_RELAUNCH=true), same group.
			var child proc
			for _, p := range tree[1:] {
				if p.Comm == "node" && p.PPID == top.PID {
					child = p
				}
			}
			if child.PID == 0 || child.PGRP != top.PGRP || child.SID != top.SID || child.Env["GEMINI_CLI_NO_RELAUNCH"] != "true" {
				t.Errorf("no relaunched child in the group of %s: %s", top, child)
			}
			// The command runs in a session and process group of its own (the
			// shell leads it), away from the CLI's.
			if sleep.SID == top.SID || sleep.PGRP == top.PGRP || sleep.SID != sleep.PGRP {
				t.Errorf("sleep %s shares the CLI's session or group %s", sleep, top)
			}
			leader, ok := readProc(sleep.SID)
			if !ok || leader.Comm != "bash" || leader.PPID != child.PID {
				t.Errorf("the session leader %s is not the CLI's bash", leader)
			}
			// It keeps the CLI's environment: our marker, and the API key too.
			if sleep.Env["GEMINI_API_KEY"] != "test" || sleep.Env["GEMINI_CLI"] != "1" || sleep.Env["CONCH_TEST_MARKER"] == "" {
				t.Errorf("sleep env: GEMINI_API_KEY=%q GEMINI_CLI=%q marker=%q",
					sleep.Env["GEMINI_API_KEY"], sleep.Env["GEMINI_CLI"], sleep.Env["CONCH_TEST_MARKER"])
			}
			// --skip-trust works by setting GEMINI_CLI_TRUST_WORKSPACE=true in
			// the CLI's own environment, so its commands inherit that too.
			if sleep.Env["GEMINI_CLI_TRUST_WORKSPACE"] != "true" {
				t.Errorf("sleep env GEMINI_CLI_TRUST_WORKSPACE=%q", sleep.Env["GEMINI_CLI_TRUST_WORKSPACE"])
			}
			t.Logf("sleep env TERM=%q PAGER=%q GIT_CONFIG_GLOBAL=%q", sleep.Env["TERM"], sleep.Env["PAGER"], sleep.Env["GIT_CONFIG_GLOBAL"])
		})
	}
}

// TestGeminiSignals: what SIGTERM, SIGKILL and a closed stdin do to the
// CLI and to a running shell command.
func TestGeminiSignals(t *testing.T) {
	norelaunch := []string{"GEMINI_CLI_NO_RELAUNCH=true"}
	t.Run("SIGTERM-relaunching", func(t *testing.T) {
		r, _, _, _, sleep := startSleep(t, acpOpts{})
		tree := descendants(r.cmd.Process.Pid)
		syscall.Kill(r.cmd.Process.Pid, syscall.SIGTERM)
		if r.exited(3 * time.Second) {
			t.Fatalf("the relaunching parent ended on SIGTERM (%v)", r.exitErr)
		}
		// it ignores SIGTERM; the relaunched child does not.
		var child proc
		for _, p := range tree[1:] {
			if p.Comm == "node" && p.PPID == r.cmd.Process.Pid {
				child = p
			}
		}
		syscall.Kill(child.PID, syscall.SIGTERM)
		if !r.exited(10 * time.Second) {
			t.Fatalf("still running 10s after SIGTERM to the child %d", child.PID)
		}
		if r.exitErr != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0", r.exitErr)
		}
		if !waitGone(sleep.PID, 5*time.Second) {
			t.Errorf("sleep survived SIGTERM")
		}
	})
	t.Run("SIGKILL-relaunching", func(t *testing.T) {
		// SIGKILL to the process we started orphans the relaunched child,
		// which runs on (and holds our stdout pipe); its group is ours.
		r, _, _, _, sleep := startSleep(t, acpOpts{})
		pid := r.cmd.Process.Pid
		syscall.Kill(pid, syscall.SIGKILL)
		time.Sleep(2 * time.Second)
		var child proc
		for _, p := range withEnv("CONCH_TEST_MARKER", sleep.Env["CONCH_TEST_MARKER"]) {
			if p.Comm == "node" {
				child = p
			}
		}
		if child.PID == 0 || child.PGRP != pid || !alive(sleep.PID) {
			t.Fatalf("after SIGKILL to %d: child %s, sleep alive %v", pid, child, alive(sleep.PID))
		}
		t.Logf("orphaned child: %s", child)
		if r.exited(0) {
			t.Errorf("Wait returned though the child holds stdout")
		}
		syscall.Kill(-pid, syscall.SIGKILL)
		if !r.exited(10*time.Second) || !waitGone(sleep.PID, 5*time.Second) {
			t.Errorf("SIGKILL to the group left the child or the sleep")
		}
	})
	t.Run("SIGTERM-group", func(t *testing.T) {
		// SIGTERM to the process group reaches both node processes.
		r, _, _, _, sleep := startSleep(t, acpOpts{})
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
		if !r.exited(10 * time.Second) {
			t.Fatalf("still running 10s after SIGTERM to its group")
		}
		if r.exitErr != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0", r.exitErr)
		}
		if !waitGone(sleep.PID, 5*time.Second) {
			t.Errorf("sleep survived SIGTERM")
		}
	})
	t.Run("SIGTERM-norelaunch", func(t *testing.T) {
		r, _, _, _, sleep := startSleep(t, acpOpts{env: norelaunch})
		if tree := descendants(r.cmd.Process.Pid); len(tree) < 2 || tree[1].Comm != "bash" {
			t.Errorf("GEMINI_CLI_NO_RELAUNCH=true still relaunches: %v", tree)
		}
		syscall.Kill(r.cmd.Process.Pid, syscall.SIGTERM)
		if !r.exited(10 * time.Second) {
			t.Fatalf("still running 10s after SIGTERM")
		}
		if r.exitErr != nil {
			t.Errorf("exit after SIGTERM: %v, want status 0", r.exitErr)
		}
		if !waitGone(sleep.PID, 5*time.Second) {
			t.Errorf("sleep survived SIGTERM")
		}
	})
	t.Run("stdin-EOF", func(t *testing.T) {
		// A closed stdin does not stop a prompt: the CLI lets the command
		// finish, sends its result to the model, and only then exits, 0.
		mark := marker(t)
		killMarked(t, "CONCH_TEST_MARKER", mark)
		srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
			if last(turn).Role == "tool" {
				return modelserver.Reply{Text: "Slept."}
			}
			return modelserver.Reply{Calls: []modelserver.Call{shellCall("", "sleep 4")}}
		})
		r := startACP(t, srv, acpOpts{env: append(norelaunch, "CONCH_TEST_MARKER="+mark)})
		r.onRequest = allowOnce
		r.initialize(nil)
		sid := r.newSession(nil)
		pending := r.send("session/prompt", textPrompt(sid, "Sleep."))
		sleep, ok := waitProc(30*time.Second, func() (proc, bool) {
			for _, p := range withEnv("CONCH_TEST_MARKER", mark) {
				if p.Comm == "sleep" {
					return p, true
				}
			}
			return proc{}, false
		})
		if !ok {
			t.Fatal("no sleep came")
		}
		start := time.Now()
		r.stdin.Close()
		if r.exited(2 * time.Second) {
			t.Fatalf("exited at once on stdin EOF (%v)", r.exitErr)
		}
		if !alive(sleep.PID) {
			t.Errorf("the command was stopped by stdin EOF")
		}
		if !r.exited(20 * time.Second) {
			t.Fatalf("still running 20s after stdin closed")
		}
		m := r.await(pending, time.Second, "the prompt")
		if m.Error != nil || !strings.Contains(string(m.Result), `"stopReason":"end_turn"`) || len(srv.Turns()) != 2 || r.exitErr != nil {
			t.Errorf("after stdin EOF: prompt %s %v, %d model requests, exit %v", m.Result, m.Error, len(srv.Turns()), r.exitErr)
		}
		t.Logf("exited %v after stdin EOF, prompt answered %s", time.Since(start).Round(100*time.Millisecond), m.Result)
	})
	t.Run("SIGKILL-norelaunch", func(t *testing.T) {
		// The pty's master closes with the CLI: its session gets SIGHUP.
		r, _, _, _, sleep := startSleep(t, acpOpts{env: norelaunch})
		syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL)
		if !r.exited(10 * time.Second) {
			t.Fatalf("still running after SIGKILL")
		}
		if !waitGone(sleep.PID, 5*time.Second) {
			t.Errorf("sleep survived SIGKILL of the CLI")
		}
	})
	t.Run("SIGKILL-norelaunch-nohup", func(t *testing.T) {
		// A command that ignores SIGHUP outlives a SIGKILLed CLI, orphaned in
		// its own session: killing the CLI's process group does not reach it.
		mark := marker(t)
		killMarked(t, "CONCH_TEST_MARKER", mark)
		srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
			return modelserver.Reply{Calls: []modelserver.Call{shellCall("", "trap '' HUP; sleep 300")}}
		})
		r := startACP(t, srv, acpOpts{env: append(norelaunch, "CONCH_TEST_MARKER="+mark)})
		r.onRequest = allowOnce
		r.initialize(nil)
		sid := r.newSession(nil)
		r.send("session/prompt", textPrompt(sid, "Sleep."))
		sleep, ok := waitProc(30*time.Second, func() (proc, bool) {
			for _, p := range withEnv("CONCH_TEST_MARKER", mark) {
				if p.Comm == "sleep" {
					return p, true
				}
			}
			return proc{}, false
		})
		if !ok {
			t.Fatal("no sleep came")
		}
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		if !r.exited(10 * time.Second) {
			t.Fatalf("still running after SIGKILL")
		}
		time.Sleep(time.Second)
		p, ok := readProc(sleep.PID)
		if !ok {
			t.Fatalf("the HUP-ignoring sleep died with the CLI")
		}
		t.Logf("left behind: %s", p)
		if p.SID != sleep.SID {
			t.Errorf("sleep changed session: %s", p)
		}
		// What finds it: its session id (that of the CLI's bash), or an
		// environment marker the CLI was started with.
		for _, q := range allProcs() {
			if q.SID == sleep.SID {
				syscall.Kill(q.PID, syscall.SIGKILL)
			}
		}
		if !waitGone(sleep.PID, 5*time.Second) {
			t.Errorf("sleep survived SIGKILL of its session")
		}
	})
}

// TestGeminiRateLimit: 429 answers, the retries, and the words of the
// error session/prompt ends with.
func TestGeminiRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reply    modelserver.Reply
		attempts int
		requests int
		code     int
		message  string
	}{
		{"per-minute", PerMinuteLimit(testModel, "1s"), 1, 1, 429,
			"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 1s.\nSuggested retry after 1s."},
		{"per-minute-no-retry-info", PerMinuteLimit(testModel, ""), 1, 1, 429,
			"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nSuggested retry after 60s."},
		{"daily", DailyQuota(testModel), 1, 1, 429, "You have exhausted your daily quota on this model."},
		// a daily quota is not retried whatever maxAttempts says
		{"daily-3-attempts", DailyQuota(testModel), 3, 1, 429, "You have exhausted your daily quota on this model."},
		{"bare-429", ErrorReply(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."), 1, 1, 429,
			"Resource has been exhausted (e.g. check quota)."},
		{"503", ErrorReply(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), 1, 1, 503,
			"The model is overloaded. Please try again later."},
		// one retry, after the first backoff delay of 5s (+0-20% jitter)
		{"per-minute-2-attempts", PerMinuteLimit(testModel, "1s"), 2, 2, 429,
			"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 1s.\nSuggested retry after 1s."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var times []time.Time
			srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
				mu.Lock()
				times = append(times, time.Now())
				mu.Unlock()
				return tc.reply
			})
			s := baseSettings()
			s["general"].(map[string]any)["maxAttempts"] = tc.attempts
			r := startACP(t, srv, acpOpts{settings: s})
			r.initialize(nil)
			sid := r.newSession(nil)
			from := r.logLen()
			start := time.Now()
			m := r.call("session/prompt", textPrompt(sid, "Hi."), 90*time.Second)
			took := time.Since(start)
			if m.Error == nil || m.Error.Code != tc.code || m.Error.Message != tc.message || len(m.Error.Data) != 0 {
				t.Errorf("prompt answer: %s %s, want error %d %q", m.Result, jsonString(m.Error), tc.code, tc.message)
			}
			mu.Lock()
			var gaps []string
			for i := 1; i < len(times); i++ {
				gaps = append(gaps, times[i].Sub(times[i-1]).Round(10*time.Millisecond).String())
			}
			n := len(times)
			mu.Unlock()
			if n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			// The CLI waits at least 5 s before its first retry (how much
			// longer depends on the machine's load, so only the floor is
			// checked).
			if tc.requests == 2 && took < 5*time.Second {
				t.Errorf("the retry came after %v, want at least 5s", took)
			}
			// Nothing is said on the ACP side while it retries.
			for _, u := range updates(r.messages(from)) {
				if u.SessionUpdate != "available_commands_update" { // sent after session/new
					t.Errorf("update during the retries: %s", jsonString(u))
				}
			}
			t.Logf("error after %v, %d requests, gaps %v: %s", took.Round(10*time.Millisecond), n, gaps, jsonString(m.Error))
		})
	}
}

// TestGeminiMCP: MCP servers given in session/new, over HTTP and stdio.
func TestGeminiMCP(t *testing.T) {
	web := newMCPHTTP(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stdioLog := filepath.Join(t.TempDir(), "stdio.log")
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		if last(turn).Role == "tool" {
			return modelserver.Reply{Text: "Found it."}
		}
		return modelserver.Reply{Calls: []modelserver.Call{
			{Name: "mcp_web_lookup", Args: json.RawMessage(`{"query":"conch"}`)},
			{Name: "mcp_local_lookup", Args: json.RawMessage(`{"query":"shell"}`)},
		}}
	})
	r := startACP(t, srv, acpOpts{})
	rec := &recorder{answer: allowOnce}
	r.onRequest = rec.handle
	r.initialize(nil)
	sid := r.newSession([]any{
		map[string]any{"type": "http", "name": "web", "url": web.URL + "/mcp",
			"headers": []any{map[string]any{"name": "X-Conch", "value": "yes"}}},
		map[string]any{"name": "local", "command": exe, "args": []string{}, "env": []any{
			map[string]any{"name": "CONCH_GEMINI_MCP_STDIO", "value": "1"},
			map[string]any{"name": "CONCH_GEMINI_MCP_LOG", "value": stdioLog}}},
	})
	if pr, perr := r.prompt(sid, "Look them up.", 60*time.Second); perr != nil || pr.StopReason != "end_turn" {
		t.Fatalf("prompt: %+v %v", pr, perr)
	}
	tools := srv.Turns()[0].Tools
	if !contains(tools, "mcp_web_lookup") || !contains(tools, "mcp_local_lookup") {
		t.Errorf("the MCP tools are not offered as mcp_<server>_<tool>: %v", tools)
	}
	perms := rec.permissions()
	if len(perms) != 2 {
		t.Fatalf("%d permission requests, want one per MCP call", len(perms))
	}
	for _, p := range perms {
		if strings.Join(p.optionIDs(), " ") != "proceed_always_server/allow_always proceed_always_tool/allow_always proceed_once/allow_once cancel/reject_once" ||
			p.ToolCall.Kind != "other" {
			t.Errorf("MCP permission request: %s", jsonString(p))
		}
	}
	if perms[0].ToolCall.Title != "lookup (web MCP Server)" || string(perms[0].ToolCall.Content) != `[{"type":"content","content":{"type":"text","text":"{\"query\":\"conch\"}"}}]` {
		t.Errorf("MCP permission toolCall: %s", jsonString(perms[0].ToolCall))
	}
	var results []string
	for _, m := range srv.Turns()[1].Results() {
		results = append(results, m.Text)
	}
	want := []string{"<untrusted_context>\nlooked up: conch\n</untrusted_context>", "<untrusted_context>\nlooked up: shell\n</untrusted_context>"}
	if strings.Join(results, "|") != strings.Join(want, "|") {
		t.Errorf("results %q, want %q", results, want)
	}
	if calls := web.calls(); !contains(calls, "tools/call") {
		t.Errorf("HTTP MCP calls: %v", calls)
	}
	web.mu.Lock()
	if h := web.headers[0].Get("X-Conch"); h != "yes" {
		t.Errorf("the HTTP MCP server got X-Conch=%q", h)
	}
	web.mu.Unlock()
	b, _ := os.ReadFile(stdioLog)
	if !strings.Contains(string(b), `"method":"tools/call"`) {
		t.Errorf("the stdio MCP server got:\n%s", b)
	}
	dump(t, r, srv)
}

// TestGeminiTrust: the folder-trust check, in -p mode (exit 55) and in
// ACP mode (no exit; approval modes held at "default").
func TestGeminiTrust(t *testing.T) {
	bin := geminiBinary(t)
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "hi"} })
	const msg = "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode. For more details, see https://geminicli.com/docs/cli/trusted-folders/#headless-and-automated-environments"
	for _, tc := range []struct {
		name   string
		args   []string
		env    []string
		code   int
		stderr string // its first line
	}{
		{"print-untrusted", nil, nil, 55, "\x1b[31m" + msg + "\x1b[0m"},
		{"print-untrusted-NO_COLOR", nil, []string{"NO_COLOR=1"}, 55, msg},
		{"print-skip-trust", []string{"--skip-trust"}, nil, 0, ""},
		{"print-env-trust", nil, []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// -p mode needs an auth type: the env's GOOGLE_GEMINI_BASE_URL makes
			// it "gateway", which -p rejects (exit 41 "Invalid auth method
			// selected."), so name gemini-api-key; the base URL still holds.
			st := baseSettings()
			st["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}
			home := writeHome(t, st)
			cmd := exec.Command(bin, append([]string{"-p", "hi", "-m", testModel}, tc.args...)...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(geminiEnv(home, srv.URL), tc.env...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				t.Fatal("gemini -p still running after 60s")
			}
			first, _, _ := strings.Cut(errb.String(), "\n")
			if cmd.ProcessState.ExitCode() != tc.code || (tc.code != 0 && first != tc.stderr) {
				t.Errorf("exit %d stderr %q, want %d %q", cmd.ProcessState.ExitCode(), errb.String(), tc.code, tc.stderr)
			}
			if tc.code == 0 && out.String() != "hi\n" {
				t.Errorf("stdout %q", out.String())
			}
			t.Logf("exit %d stdout %q stderr %q", cmd.ProcessState.ExitCode(), out.String(), errb.String())
		})
	}
	for _, tc := range []struct {
		name     string
		o        acpOpts
		mode     string
		setModeO bool
	}{
		{"acp-untrusted", acpOpts{noTrust: true, args: []string{"--approval-mode", "yolo"}}, "default", false},
		{"acp-skip-trust", acpOpts{args: []string{"--approval-mode", "yolo"}}, "yolo", true},
		{"acp-env-trust", acpOpts{noTrust: true, args: []string{"--approval-mode", "yolo"}, env: []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}}, "yolo", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startACP(t, srv, tc.o)
			r.initialize(nil)
			res, rerr := r.newSessionResult(nil)
			if rerr != nil {
				t.Fatalf("session/new: %v", rerr)
			}
			if res.Modes.CurrentModeID != tc.mode {
				t.Errorf("currentModeId %q, want %q", res.Modes.CurrentModeID, tc.mode)
			}
			if pr, perr := r.prompt(res.SessionID, "hi", 60*time.Second); perr != nil || pr.StopReason != "end_turn" {
				t.Errorf("prompt: %+v %v", pr, perr)
			}
			m := r.call("session/set_mode", map[string]any{"sessionId": res.SessionID, "modeId": "yolo"}, 30*time.Second)
			if (m.Error == nil) != tc.setModeO {
				t.Errorf("session/set_mode yolo: %s %s", m.Result, jsonString(m.Error))
			}
			if !tc.setModeO && (m.Error.Code != -32603 || !strings.Contains(string(m.Error.Data), "Cannot enable privileged approval modes in an untrusted folder.")) {
				t.Errorf("session/set_mode yolo when untrusted: %s", jsonString(m.Error))
			}
			t.Logf("set_mode yolo: %s %s", m.Result, jsonString(m.Error))
		})
	}
}

// TestGeminiClientFS: with clientCapabilities.fs true, write_file goes
// through the client (fs/read_text_file for the diff, then
// fs/write_text_file) and does not touch the disk; read_file does not.
func TestGeminiClientFS(t *testing.T) {
	for _, tc := range []struct {
		name string
		// read answers fs/read_text_file of the (missing) out.txt
		read    func(params json.RawMessage) (any, *rpcError)
		methods string
		written bool
	}{
		// a missing file has to be answered as empty content
		{"missing-as-empty", func(json.RawMessage) (any, *rpcError) { return map[string]any{"content": ""}, nil },
			"fs/read_text_file session/request_permission fs/read_text_file fs/write_text_file", true},
		// an error answer is never taken for "no such file": write_file fails,
		// and asks no permission first
		{"missing-as-error", func(params json.RawMessage) (any, *rpcError) {
			return nil, &rpcError{Code: -32002, Message: "Resource not found: " + string(params)}
		}, "fs/read_text_file fs/read_text_file", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dir string
			srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
				switch len(turn.Results()) {
				case 0:
					return modelserver.Reply{Calls: []modelserver.Call{{Name: "read_file",
						Args: json.RawMessage(`{"file_path":"` + filepath.Join(dir, "in.txt") + `"}`)}}}
				case 1:
					return modelserver.Reply{Calls: []modelserver.Call{writeCall(filepath.Join(dir, "out.txt"), "written\n")}}
				}
				return modelserver.Reply{Text: "done"}
			})
			r := startACP(t, srv, acpOpts{})
			dir = r.dir
			os.WriteFile(filepath.Join(dir, "in.txt"), []byte("on disk\n"), 0o644)
			var writes []string
			rec := &recorder{answer: func(method string, params json.RawMessage) (any, *rpcError) {
				switch method {
				case "fs/read_text_file":
					return tc.read(params)
				case "fs/write_text_file":
					var p struct{ Path, Content string }
					json.Unmarshal(params, &p)
					writes = append(writes, p.Path+"="+p.Content)
					return map[string]any{}, nil
				}
				return selected("proceed_once"), nil
			}}
			r.onRequest = rec.handle
			r.initialize(map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "terminal": true})
			sid := r.newSession(nil)
			if pr, perr := r.prompt(sid, "Copy.", 60*time.Second); perr != nil || pr.StopReason != "end_turn" {
				t.Fatalf("prompt: %+v %v", pr, perr)
			}
			if got := strings.Join(rec.methods(), " "); got != tc.methods {
				t.Errorf("agent requests: %s, want %s", got, tc.methods)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
				t.Errorf("out.txt is on disk; the client was to write it")
			}
			if (len(writes) == 1 && writes[0] == filepath.Join(dir, "out.txt")+"=written\n") != tc.written {
				t.Errorf("fs/write_text_file calls: %q", writes)
			}
			res := srv.Turns()[1].Results()
			if len(res) != 1 || res[0].Text != "on disk\n" {
				t.Errorf("read_file gave %s, want the disk's content", jsonString(res))
			}
			t.Logf("write_file result: %q", srv.Turns()[2].Results()[1].Text)
			rec.mu.Lock()
			for _, m := range rec.asked {
				t.Logf("agent asked %s %s", m.Method, m.Params)
			}
			rec.mu.Unlock()
			dump(t, r, srv)
		})
	}
}

// TestGeminiDefaultModel: without -m the model is "auto": each prompt
// first asks a flash-lite model to route it (a non-streamed
// generateContent, a side request here), then streams from the model it
// picked.
func TestGeminiDefaultModel(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "hi"} })
	var mu sync.Mutex
	var side []modelserver.Turn
	srv.Side = func(turn modelserver.Turn) modelserver.Reply {
		mu.Lock()
		side = append(side, turn)
		mu.Unlock()
		return modelserver.Reply{Text: "{}"} // not a routing decision: the default route
	}
	r := startACP(t, srv, acpOpts{noModel: true})
	r.initialize(nil)
	res, rerr := r.newSessionResult(nil)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if res.Models.CurrentModelID != "auto" {
		t.Errorf("currentModelId %q, want auto", res.Models.CurrentModelID)
	}
	if pr, perr := r.prompt(res.SessionID, "hi", 60*time.Second); perr != nil || pr.StopReason != "end_turn" {
		t.Fatalf("prompt: %+v %v", pr, perr)
	}
	reqs := srv.Requests()
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 2 || reqs[0].Action != "generateContent" || !strings.Contains(reqs[0].Model, "flash-lite") ||
		reqs[1].Action != "streamGenerateContent" || len(side) != 1 || !strings.Contains(side[0].System, "Task Routing AI") {
		t.Errorf("requests %v", srv.Paths())
	}
	t.Logf("routed by %s to %s", reqs[0].Model, reqs[1].Model)
	dump(t, r, srv)
}

// TestGeminiBadFlag: an unknown flag value ends the CLI at once, status 1,
// with yargs' complaint and the usage on stderr.
func TestGeminiBadFlag(t *testing.T) {
	bin := geminiBinary(t)
	home := writeHome(t, baseSettings())
	cmd := exec.Command(bin, "--acp", "--approval-mode", "bogus")
	cmd.Dir = t.TempDir()
	cmd.Env = geminiEnv(home, "http://127.0.0.1:1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatal("still running after 60s")
	}
	want := "Invalid values:\n  Argument: approval-mode, Given: \"bogus\", Choices: \"default\", \"auto_edit\", \"yolo\", \"plan\"\n"
	if cmd.ProcessState.ExitCode() != 1 || !strings.HasPrefix(errb.String(), want) {
		t.Errorf("exit %d, stderr %.300q", cmd.ProcessState.ExitCode(), errb.String())
	}
}

// TestGeminiNetwork: with baseSettings the CLI connects to nothing but the
// server on loopback, and resolves no name (strace's connect(2) log; the
// test is skipped without strace). With default settings it looks up
// play.googleapis.com (usage statistics) at once.
func TestGeminiNetwork(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace")
	}
	for _, tc := range []struct {
		name     string
		settings map[string]any
		isolated bool
	}{
		{"base-settings", baseSettings(), true},
		{"default-settings", map[string]any{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
				if last(turn).Role == "tool" {
					return modelserver.Reply{Text: "done"}
				}
				return modelserver.Reply{Text: "Listing.", Calls: []modelserver.Call{{Name: "list_directory", Args: json.RawMessage(`{"dir_path":"."}`)}}}
			})
			log := filepath.Join(t.TempDir(), "strace.log")
			r := startACP(t, srv, acpOpts{settings: tc.settings,
				wrap: []string{strace, "-f", "-qq", "-s", "64", "-e", "trace=connect,sendto,sendmmsg", "-o", log}})
			r.initialize(nil)
			sid := r.newSession(nil)
			if _, perr := r.prompt(sid, "List.", 60*time.Second); perr != nil {
				t.Fatal(perr)
			}
			time.Sleep(time.Second)
			r.stdin.Close()
			r.exited(20 * time.Second)
			b, _ := os.ReadFile(log)
			var outside []string
			for _, line := range strings.Split(string(b), "\n") {
				if !strings.Contains(line, "AF_INET") {
					continue
				}
				if !strings.Contains(line, `inet_addr("127.0.0.1")`) || strings.Contains(line, "htons(53)") {
					outside = append(outside, line)
				}
			}
			if tc.isolated && len(outside) > 0 {
				t.Errorf("connections off loopback:\n%s", strings.Join(outside, "\n"))
			}
			if !tc.isolated && !strings.Contains(string(b), `\4play\ngoogleapis\3com`) {
				t.Errorf("no lookup of play.googleapis.com with default settings:\n%s", strings.Join(outside, "\n"))
			}
			t.Logf("%d connections off loopback", len(outside))
		})
	}
}

// TestGeminiSlashCommand: a prompt that starts with a known command
// (/about, /help, /memory, /init, /restore, /extensions; "$" too) is
// answered by the CLI itself, with no model request; an unknown one goes
// to the model as text.
func TestGeminiSlashCommand(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "model"} })
	r := startACP(t, srv, acpOpts{})
	r.initialize(nil)
	sid := r.newSession(nil)
	from := r.logLen()
	pr, perr := r.prompt(sid, "/about", 30*time.Second)
	text, _ := chunkText(updates(r.messages(from)), "agent_message_chunk")
	if perr != nil || pr.StopReason != "end_turn" || pr.Meta.Quota.TokenCount.InputTokens != 0 ||
		len(srv.Turns()) != 0 || !strings.HasPrefix(text, "Gemini CLI Info:\n- Version: 0.61.0") {
		t.Errorf("/about: %+v %v, %d model requests, text %q", pr, perr, len(srv.Turns()), text)
	}
	t.Logf("/about: %q", text)
	if _, perr := r.prompt(sid, "/nosuch thing", 30*time.Second); perr != nil || len(srv.Turns()) != 1 ||
		srv.Turns()[0].FirstUser() != "/nosuch thing" {
		t.Errorf("/nosuch: %v, turns %s", perr, jsonString(srv.Turns()))
	}
}

// TestGeminiPermissionError: a client that answers
// session/request_permission with an error: the tool fails unrun, with a
// useless message.
func TestGeminiPermissionError(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		if last(turn).Role == "tool" {
			return modelserver.Reply{Text: "ok"}
		}
		return modelserver.Reply{Calls: []modelserver.Call{shellCall("", "echo made > created.txt")}}
	})
	r := startACP(t, srv, acpOpts{})
	r.onRequest = func(method string, params json.RawMessage) (any, *rpcError) {
		return nil, &rpcError{Code: -32603, Message: "the client failed"}
	}
	r.initialize(nil)
	sid := r.newSession(nil)
	from := r.logLen()
	if pr, perr := r.prompt(sid, "Make a file.", 30*time.Second); perr != nil || pr.StopReason != "end_turn" {
		t.Fatalf("prompt: %+v %v", pr, perr)
	}
	var failed []update
	for _, u := range updates(r.messages(from)) {
		if u.SessionUpdate == "tool_call_update" {
			failed = append(failed, u)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "created.txt")); err == nil {
		t.Errorf("the command ran")
	}
	res := srv.Turns()[1].Results()
	if len(failed) != 1 || failed[0].Status != "failed" || !strings.Contains(string(failed[0].Content), "[object Object]") ||
		len(res) != 1 || res[0].Text != "[object Object]" {
		t.Errorf("updates %s, results %s", jsonString(failed), jsonString(res))
	}
}
