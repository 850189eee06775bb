package responses

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"conch/backend/testrig/modelserver"
)

// codexRequest is a /v1/responses body in the shape Codex 0.171 sends
// (trimmed from a captured one), with every kind of input item.
const codexRequest = `{
 "model": "gpt-5.5", "stream": true, "tool_choice": "auto", "parallel_tool_calls": true,
 "store": false, "include": ["reasoning.encrypted_content"],
 "tools": [
  {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
  {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
  {"type": "tool_search", "execution": "client"},
  {"type": "web_search", "external_web_access": false}
 ],
 "input": [
  {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
  {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]},
  {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "make a file"}]},
  {"type": "reasoning", "summary": [], "encrypted_content": "xyz"},
  {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "On it."}]},
  {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "call_id": "c1"},
  {"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 0"},
  {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n", "call_id": "c2"},
  {"type": "custom_tool_call_output", "call_id": "c2", "output": "Success."},
  {"type": "tool_search_call", "call_id": "c3", "execution": "client", "arguments": {"query": "ask"}},
  {"type": "tool_search_output", "call_id": "c3", "execution": "client", "tools": [
   {"type": "namespace", "name": "mcp__conch", "tools": [{"type": "function", "name": "ask_user", "parameters": {}}]}]},
  {"type": "function_call", "name": "ask_user", "namespace": "mcp__conch", "arguments": "{\"text\":\"ok?\"}", "call_id": "c4"},
  {"type": "function_call_output", "call_id": "c4", "output": [{"type": "input_text", "text": "Wall time: 0 seconds\nOutput:"}, {"type": "input_text", "text": "yes"}]},
  {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>"}]}
 ]
}`

func TestDecode(t *testing.T) {
	var req request
	if err := json.Unmarshal([]byte(codexRequest), &req); err != nil {
		t.Fatal(err)
	}
	turn, kinds := decode(req)
	if turn.Model != "gpt-5.5" {
		t.Errorf("model %q", turn.Model)
	}
	if turn.System != "You are Codex.\n\n<environment_context>\n  <cwd>/w</cwd>\n</environment_context>" {
		t.Errorf("system %q", turn.System)
	}
	wantTools := []string{"exec_command", "apply_patch", "tool_search", "web_search", "mcp__conch__ask_user"}
	if !reflect.DeepEqual(turn.Tools, wantTools) {
		t.Errorf("tools %q, want %q", turn.Tools, wantTools)
	}
	if k := kinds["mcp__conch__ask_user"]; k != (toolKind{Type: "function", Namespace: "mcp__conch", Name: "ask_user"}) {
		t.Errorf("kind of the MCP tool %+v", k)
	}
	if kinds["apply_patch"].Type != "custom" {
		t.Errorf("apply_patch kind %+v", kinds["apply_patch"])
	}
	want := []modelserver.Message{
		{Role: "user", Text: "make a file"},
		{Role: "assistant", Text: "On it.", Calls: []modelserver.Call{{ID: "c1", Name: "exec_command", Args: json.RawMessage(`{"cmd":"ls"}`)}}},
		{Role: "tool", CallID: "c1", Text: "Process exited with code 0"},
		{Role: "assistant", Calls: []modelserver.Call{{ID: "c2", Name: "apply_patch", Args: json.RawMessage(`"*** Begin Patch\n*** End Patch\n"`)}}},
		{Role: "tool", CallID: "c2", Text: "Success."},
		{Role: "assistant", Calls: []modelserver.Call{{ID: "c3", Name: "tool_search", Args: json.RawMessage(`{"query": "ask"}`)}}},
		{Role: "tool", CallID: "c3", Text: `[
   {"type": "namespace", "name": "mcp__conch", "tools": [{"type": "function", "name": "ask_user", "parameters": {}}]}]`},
		{Role: "assistant", Calls: []modelserver.Call{{ID: "c4", Name: "mcp__conch__ask_user", Args: json.RawMessage(`{"text":"ok?"}`)}}},
		{Role: "tool", CallID: "c4", Text: "Wall time: 0 seconds\nOutput:\nyes"},
		{Role: "user", Text: "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>"},
	}
	if len(turn.Messages) != len(want) {
		t.Fatalf("%d messages, want %d: %+v", len(turn.Messages), len(want), turn.Messages)
	}
	for i := range want {
		if !reflect.DeepEqual(turn.Messages[i], want[i]) {
			t.Errorf("message %d:\n got %+v\nwant %+v", i, turn.Messages[i], want[i])
		}
	}
	if turn.FirstUser() != "make a file" {
		t.Errorf("first user %q", turn.FirstUser())
	}
}

// event is one server-sent event.
type event struct {
	Name string
	Data map[string]any
}

func readEvents(t *testing.T, r io.Reader) []event {
	t.Helper()
	var out []event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			if d["type"] != name {
				t.Errorf("event %q has type %v", name, d["type"])
			}
			out = append(out, event{name, d})
		}
	}
	return out
}

func TestStream(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Hello there", Calls: []modelserver.Call{
			Exec("call_1", "echo <hi>"),
			Patch("call_2", "*** Begin Patch\n*** End Patch\n"),
			{ID: "call_3", Name: "mcp__conch__ask_user", Args: json.RawMessage(`{"text":"?"}`)},
			Search("call_4", "ask"),
		}}
	})
	resp, err := http.Post(srv.BaseURL()+"/responses", "application/json", strings.NewReader(codexRequest))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readEvents(t, resp.Body)
	var names []string
	var deltas string
	var done []map[string]any
	for _, e := range events {
		names = append(names, e.Name)
		switch e.Name {
		case "response.output_text.delta":
			deltas += e.Data["delta"].(string)
		case "response.output_item.done":
			done = append(done, e.Data["item"].(map[string]any))
		}
	}
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Errorf("events %q", names)
	}
	if deltas != "Hello there" {
		t.Errorf("deltas %q", deltas)
	}
	if len(done) != 5 {
		t.Fatalf("%d items done, want 5", len(done))
	}
	check := func(i int, want map[string]any) {
		t.Helper()
		for k, v := range want {
			if !reflect.DeepEqual(done[i][k], v) {
				t.Errorf("item %d %s = %#v, want %#v", i, k, done[i][k], v)
			}
		}
	}
	check(0, map[string]any{"type": "message", "role": "assistant"})
	check(1, map[string]any{"type": "function_call", "name": "exec_command", "call_id": "call_1", "arguments": `{"cmd":"echo <hi>"}`})
	check(2, map[string]any{"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_2", "input": "*** Begin Patch\n*** End Patch\n"})
	check(3, map[string]any{"type": "function_call", "name": "ask_user", "namespace": "mcp__conch", "call_id": "call_3"})
	check(4, map[string]any{"type": "tool_search_call", "call_id": "call_4", "execution": "client",
		"arguments": map[string]any{"query": "ask", "limit": float64(8)}})
	final := events[len(events)-1].Data["response"].(map[string]any)
	usage := final["usage"].(map[string]any)
	if final["status"] != "completed" || usage["total_tokens"] == nil || len(final["output"].([]any)) != 5 {
		t.Errorf("response.completed %v", final)
	}
	if n := len(srv.Turns()); n != 1 {
		t.Errorf("%d turns", n)
	}
}

func TestErrorReplies(t *testing.T) {
	replies := []modelserver.Reply{RateLimit("gpt-5.5", 7), Quota()}
	i := 0
	srv := New(t, func(modelserver.Turn) modelserver.Reply { r := replies[i]; i++; return r })
	for _, want := range []struct{ code, retryAfter string }{{"rate_limit_exceeded", "7"}, {"insufficient_quota", ""}} {
		resp, err := http.Post(srv.BaseURL()+"/responses", "application/json", strings.NewReader(codexRequest))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code, Type, Message string
			}
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 429 || body.Error.Code != want.code || resp.Header.Get("Retry-After") != want.retryAfter {
			t.Errorf("status %d, code %q, retry-after %q; want 429 %q %q", resp.StatusCode, body.Error.Code, resp.Header.Get("Retry-After"), want.code, want.retryAfter)
		}
	}
	if !strings.Contains(replies[0].Body, "Please try again in 7s.") {
		t.Errorf("rate limit message %s", replies[0].Body)
	}
	for _, r := range srv.Requests() {
		if r.Status != 429 {
			t.Errorf("request logged with status %d", r.Status)
		}
	}
}

func TestOtherPaths(t *testing.T) {
	srv := New(t, func(modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "x"} })
	for path, status := range map[string]int{"/v1/models": 200, "/v1/other": 404} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, status)
		}
	}
	paths := srv.Paths()
	if len(paths) != 2 || len(srv.Turns()) != 0 {
		t.Errorf("paths %q, turns %d", paths, len(srv.Turns()))
	}
}
