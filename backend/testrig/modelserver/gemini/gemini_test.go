package gemini

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"conch/backend/testrig/modelserver"
)

// A request as the Gemini CLI 0.61.0 sends it (trimmed): the session
// context and the prompt as two parts of the first user content, a call
// with the id the CLI gave it, and its functionResponse.
const cliRequest = `{
  "contents": [
    {"role": "user", "parts": [
      {"text": "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n</session_context>"},
      {"text": "Make a file."}]},
    {"role": "model", "parts": [
      {"thought": true, "text": "**Plan**\nrun it"},
      {"functionCall": {"id": "run_shell_command_1796120974062_0", "name": "run_shell_command",
        "args": {"command": "echo made > created.txt"}},
       "thoughtSignature": "skip_thought_signature_validator"}]},
    {"role": "user", "parts": [
      {"functionResponse": {"id": "run_shell_command_1796120974062_0", "name": "run_shell_command",
        "response": {"output": "<untrusted_context>\nOutput: (empty)\n</untrusted_context>"}}}]},
    {"role": "user", "parts": [
      {"functionResponse": {"name": "write_file", "response": {"error": "Tool \"write_file\" was canceled by the user."}}}]}
  ],
  "systemInstruction": {"role": "user", "parts": [{"text": "You are an interactive CLI agent."}]},
  "tools": [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "write_file"}]}],
  "generationConfig": {"temperature": 1, "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}}
}`

func TestDecode(t *testing.T) {
	turn, err := Decode([]byte(cliRequest))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(turn.System, "You are an interactive CLI agent.\n<session_context>") {
		t.Errorf("System = %q", turn.System)
	}
	if strings.Join(turn.Tools, ",") != "run_shell_command,write_file" {
		t.Errorf("Tools = %v", turn.Tools)
	}
	if turn.FirstUser() != "Make a file." {
		t.Errorf("FirstUser = %q", turn.FirstUser())
	}
	if len(turn.Messages) != 4 {
		t.Fatalf("messages: %s", jsonString(turn.Messages))
	}
	a := turn.Messages[1]
	if a.Role != "assistant" || a.Text != "" || len(a.Calls) != 1 || a.Calls[0].ID != "run_shell_command_1796120974062_0" ||
		a.Calls[0].Name != "run_shell_command" || string(a.Calls[0].Args) != `{"command": "echo made > created.txt"}` {
		t.Errorf("assistant message: %s", jsonString(a))
	}
	res := turn.Results()
	if len(res) != 2 || res[0].CallID != "run_shell_command_1796120974062_0" || res[0].Text != "<untrusted_context>\nOutput: (empty)\n</untrusted_context>" ||
		res[1].CallID != "write_file" || res[1].Text != `Tool "write_file" was canceled by the user.` {
		t.Errorf("results: %s", jsonString(res))
	}
}

func TestServer(t *testing.T) {
	srv := New(t, func(turn modelserver.Turn) modelserver.Reply {
		if turn.FirstUser() == "limit" {
			return DailyQuota(turn.Model)
		}
		return modelserver.Reply{Text: "Hello there.", Calls: []modelserver.Call{{ID: "c1", Name: "run_shell_command", Args: json.RawMessage(`{"command":"ls"}`)}}}
	})
	srv.Quiet = true
	post := func(action, first string) *http.Response {
		body := `{"contents":[{"role":"user","parts":[{"text":"` + first + `"}]}]}`
		resp, err := http.Post(srv.URL+"/v1beta/models/gemini-2.5-flash:"+action, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	resp := post("streamGenerateContent?alt=sse", "hi")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var chunks []Response
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var c Response
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatalf("chunk %q: %v", data, err)
			}
			chunks = append(chunks, c)
		}
	}
	var text strings.Builder
	var calls []*FunctionCall
	for _, c := range chunks {
		for _, p := range c.Candidates[0].Content.Parts {
			if p.Text != nil {
				text.WriteString(*p.Text)
			}
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall)
			}
		}
	}
	lastChunk := chunks[len(chunks)-1]
	if len(chunks) != 4 || text.String() != "Hello there." || len(calls) != 1 || calls[0].ID != "c1" ||
		lastChunk.Candidates[0].FinishReason != "STOP" || lastChunk.UsageMetadata == nil || chunks[0].Candidates[0].FinishReason != "" {
		t.Errorf("chunks: %s", jsonString(chunks))
	}

	resp = post("generateContent", "side")
	var one Response
	json.NewDecoder(resp.Body).Decode(&one)
	if resp.StatusCode != 200 || *one.Candidates[0].Content.Parts[0].Text != "ok" {
		t.Errorf("generateContent: %d %s", resp.StatusCode, jsonString(one))
	}

	resp = post("streamGenerateContent?alt=sse", "limit")
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Code    int
			Status  string
			Details []map[string]any
		}
	}
	json.Unmarshal(b, &e)
	if resp.StatusCode != 429 || e.Error.Code != 429 || e.Error.Status != "RESOURCE_EXHAUSTED" || len(e.Error.Details) != 2 {
		t.Errorf("daily quota answer: %d %s", resp.StatusCode, b)
	}

	resp = post("countTokens", "x")
	if resp.StatusCode != 200 {
		t.Errorf("countTokens: %d", resp.StatusCode)
	}
	r404, _ := http.Get(srv.URL + "/nowhere")
	r404.Body.Close()
	if r404.StatusCode != 404 {
		t.Errorf("unknown path: %d", r404.StatusCode)
	}
	if got := len(srv.Turns()); got != 2 {
		t.Errorf("%d turns recorded, want the 2 streamed ones", got)
	}
	if got := strings.Join(srv.Paths(), "\n"); !strings.Contains(got, "POST /v1beta/models/gemini-2.5-flash:countTokens") ||
		!strings.Contains(got, "GET /nowhere") {
		t.Errorf("paths:\n%s", got)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
