package anthropic

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"conch/backend/testrig/modelserver"
)

var client = &http.Client{Timeout: 10 * time.Second}

// A request shaped like Claude Code's: system blocks, a reminder block and
// the prompt, a "system" turn, a tool call and its result.
const claudeLikeBody = `{
  "model": "claude-opus-5-5",
  "stream": true,
  "max_tokens": 128000,
  "system": [{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.332"},{"type":"text","text":"You are a Claude agent.","cache_control":{"type":"ephemeral"}}],
  "messages": [
    {"role":"user","content":[{"type":"text","text":"<system-reminder>\nAttribution...\n</system-reminder>\n"},{"type":"text","text":"Create hello.txt."}]},
    {"role":"system","content":"# Environment\nPrimary working directory: /tmp/x"},
    {"role":"assistant","content":[{"type":"text","text":"Writing the file."},{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/tmp/x/hello.txt","content":"hi\n"}}]},
    {"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"File created","cache_control":{"type":"ephemeral"}},{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"recorded"}],"is_error":true}]}
  ],
  "tools": [{"name":"Bash","description":"d","input_schema":{}},{"name":"Write","description":"d","input_schema":{}}]
}`

func TestDecode(t *testing.T) {
	turn, err := Decode([]byte(claudeLikeBody))
	if err != nil {
		t.Fatal(err)
	}
	if turn.Model != "claude-opus-5-5" || strings.Join(turn.Tools, ",") != "Bash,Write" {
		t.Errorf("model %q tools %v", turn.Model, turn.Tools)
	}
	for _, part := range []string{"You are a Claude agent.", "Attribution...", "# Environment"} {
		if !strings.Contains(turn.System, part) {
			t.Errorf("system lacks %q: %q", part, turn.System)
		}
	}
	if turn.FirstUser() != "Create hello.txt." {
		t.Errorf("first user %q", turn.FirstUser())
	}
	if len(turn.Messages) != 4 {
		t.Fatalf("messages %+v", turn.Messages)
	}
	a := turn.Messages[1]
	if a.Role != "assistant" || a.Text != "Writing the file." || len(a.Calls) != 1 || a.Calls[0].ID != "toolu_1" ||
		a.Calls[0].Name != "Write" || string(a.Calls[0].Args) != `{"file_path":"/tmp/x/hello.txt","content":"hi\n"}` {
		t.Errorf("assistant %+v", a)
	}
	rs := turn.Results()
	if len(rs) != 2 || rs[0].CallID != "toolu_1" || rs[0].Text != "File created" || rs[1].CallID != "toolu_2" || rs[1].Text != "recorded" {
		t.Errorf("results %+v", rs)
	}
}

type sse struct{ event, data string }

func readSSE(t *testing.T, r io.Reader) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
			}
			cur = sse{}
		}
	}
	return out
}

func TestStream(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Writing it.", Calls: []modelserver.Call{{ID: "toolu_9", Name: "Write", Args: json.RawMessage(`{"file_path": "/a", "content": "b"}`)}}}
	})
	resp, err := client.Post(srv.URL+"/v1/messages?beta=true", "application/json", strings.NewReader(claudeLikeBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readSSE(t, resp.Body)
	var names []string
	var text, js strings.Builder
	for _, e := range events {
		var d struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			ContentBlock struct {
				Type, ID, Name string
			} `json:"content_block"`
		}
		if err := json.Unmarshal([]byte(e.data), &d); err != nil || d.Type != e.event {
			t.Fatalf("event %s data %s: %v", e.event, e.data, err)
		}
		name := e.event
		if d.Delta.Type != "" {
			name += "/" + d.Delta.Type
		}
		if d.ContentBlock.Type != "" {
			name += "/" + d.ContentBlock.Type
		}
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
		text.WriteString(d.Delta.Text)
		js.WriteString(d.Delta.PartialJSON)
		if e.event == "message_delta" && d.Delta.StopReason != "tool_use" {
			t.Errorf("stop_reason %q", d.Delta.StopReason)
		}
		if d.ContentBlock.Type == "tool_use" && (d.ContentBlock.ID != "toolu_9" || d.ContentBlock.Name != "Write") {
			t.Errorf("tool_use block %+v", d.ContentBlock)
		}
	}
	want := "message_start ping content_block_start/text content_block_delta/text_delta content_block_stop " +
		"content_block_start/tool_use content_block_delta/input_json_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if text.String() != "Writing it." || js.String() != `{"file_path":"/a","content":"b"}` {
		t.Errorf("text %q json %q", text.String(), js.String())
	}
	if n := len(srv.Turns()); n != 1 {
		t.Errorf("%d turns", n)
	}
}

func TestNonStreaming(t *testing.T) {
	srv := New(t, func(modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "A title"} })
	resp, err := client.Post(srv.URL+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text string }
	}
	json.NewDecoder(resp.Body).Decode(&m)
	if m.Type != "message" || m.StopReason != "end_turn" || len(m.Content) != 1 || m.Content[0].Text != "A title" {
		t.Errorf("%+v", m)
	}
	if srv.Turns()[0].FirstUser() != "hi" {
		t.Errorf("turn %+v", srv.Turns()[0])
	}
}

func TestErrorReply(t *testing.T) {
	srv := New(t, func(modelserver.Turn) modelserver.Reply { return RateLimit("7") })
	resp, err := client.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(claudeLikeBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	if string(b) != `{"error":{"message":"Number of request tokens has exceeded your per-minute rate limit","type":"rate_limit_error"},"type":"error"}` {
		t.Errorf("body %s", b)
	}
}

func TestOtherEndpoints(t *testing.T) {
	srv := New(t, func(modelserver.Turn) modelserver.Reply {
		t.Error("brain called")
		return modelserver.Reply{}
	})
	for _, c := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"HEAD", "/api/hello", "", 200, ""},
		{"GET", "/", "", 200, "{}"},
		{"POST", "/v1/messages/count_tokens", `{"messages":[]}`, 200, `"input_tokens"`},
		{"GET", "/v1/models", "", 200, `"claude-sonnet-4-5"`},
		{"GET", "/v1/models/claude-x", "", 200, `"id":"claude-x"`},
		{"POST", "/v1/other", "{}", 404, "not_found_error"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
		}
	}
	if n := len(srv.Requests()); n != 6 {
		t.Errorf("%d requests logged", n)
	}
}
