package chatcompletions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/provider"
	"conch/backend/provider/openai"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/chatcompletions"
)

// openaiRequest is a request in the shape Conch's openai provider sends,
// with every kind of message.
const openaiRequest = `{
 "model": "big-model", "stream": true, "stream_options": {"include_usage": true},
 "messages": [
  {"role": "system", "content": "You are Conch."},
  {"role": "user", "content": "What is in go.mod?"},
  {"role": "assistant", "content": "Let me look.", "tool_calls": [
   {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"go.mod\"}"}},
   {"id": "call_2", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "module conch"},
  {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such folder"},
  {"role": "assistant", "content": null, "tool_calls": [
   {"id": "call_3", "type": "function", "function": {"name": "run_command", "arguments": "not json"}}]},
  {"role": "user", "content": [{"type": "text", "text": "Thanks"}, {"type": "image_url", "image_url": {"url": "x"}}]}
 ],
 "tools": [
  {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
  {"type": "function", "function": {"name": "list_files", "parameters": {"type": "object"}}}
 ]
}`

func TestDecode(t *testing.T) {
	turn, err := chatcompletions.Decode([]byte(openaiRequest))
	if err != nil {
		t.Fatal(err)
	}
	want := modelserver.Turn{
		Model:  "big-model",
		System: "You are Conch.",
		Tools:  []string{"read_file", "list_files"},
		Messages: []modelserver.Message{
			{Role: "user", Text: "What is in go.mod?"},
			{Role: "assistant", Text: "Let me look.", Calls: []modelserver.Call{
				{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path":"go.mod"}`)},
				{ID: "call_2", Name: "list_files", Args: json.RawMessage(`{}`)},
			}},
			{Role: "tool", Text: "module conch", CallID: "call_1"},
			{Role: "tool", Text: "Error: no such folder", CallID: "call_2"},
			{Role: "assistant", Calls: []modelserver.Call{
				{ID: "call_3", Name: "run_command", Args: json.RawMessage(`"not json"`)},
			}},
			{Role: "user", Text: "Thanks"},
		},
	}
	if !reflect.DeepEqual(turn, want) {
		t.Errorf("turn\n%+v\nwant\n%+v", turn, want)
	}
	if _, err := json.Marshal(turn); err != nil {
		t.Errorf("the turn does not marshal: %v", err)
	}
}

// client is Conch's openai provider pointed at srv.
func client(srv *chatcompletions.Server) *openai.Provider {
	return openai.New(openai.Config{ID: "test", Name: "Test", BaseURL: srv.BaseURL(), APIKey: "sk-test", DefaultModel: "big-model"})
}

// ask streams one request through p and collects its events.
func ask(t *testing.T, p *openai.Provider, text string) []provider.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := p.Stream(ctx, provider.Request{System: "Be brief.", Messages: []provider.Message{{Role: provider.User, Text: text}},
		Tools: []provider.ToolSpec{{Name: "read_file"}}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []provider.Event
	for ev := range ch {
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	return evs
}

func last(evs []provider.Event) provider.Event { return evs[len(evs)-1] }

// frames reads an SSE answer to its end: the data of each event.
func frames(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// post sends body to the server's chat completions.
func post(t *testing.T, srv *chatcompletions.Server, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(srv.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestStreamsText(t *testing.T) {
	srv := chatcompletions.New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Hello there, " + turn.FirstUser() + "!"}
	})
	evs := ask(t, client(srv), "Ana")
	var text []string
	for _, ev := range evs {
		if ev.Kind == provider.TextDelta {
			text = append(text, ev.Text)
		}
	}
	if want := []string{"Hello ", "there, ", "Ana!"}; !reflect.DeepEqual(text, want) {
		t.Errorf("text deltas %q, want %q", text, want)
	}
	usage := evs[len(evs)-2]
	if usage.Kind != provider.UsageEvent || usage.Usage.InputTokens != 100 || usage.Usage.OutputTokens != 20 {
		t.Errorf("usage %+v", usage)
	}
	if done := last(evs); done.Kind != provider.DoneEvent || done.StopReason != "stop" {
		t.Errorf("last event %+v", done)
	}
	turns := srv.Turns()
	if len(turns) != 1 || turns[0].System != "Be brief." || turns[0].FirstUser() != "Ana" ||
		!reflect.DeepEqual(turns[0].Tools, []string{"read_file"}) {
		t.Errorf("turns %+v", turns)
	}
}

func TestStreamsAToolCallSplitAcrossChunks(t *testing.T) {
	// The same calls every time: the server names each answer's afresh.
	calls := []modelserver.Call{{Name: "read_file", Args: json.RawMessage(`{"path":"go.mod","why":"to see the module"}`)}}
	srv := chatcompletions.New(t, func(modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Calls: calls, OutputTokens: 7}
	})
	var ids []string
	for range 2 {
		evs := ask(t, client(srv), "read go.mod")
		var calls []provider.ToolCall
		for _, ev := range evs {
			if ev.Kind == provider.ToolCallEvent {
				calls = append(calls, *ev.Call)
			}
		}
		if len(calls) != 1 || calls[0].Name != "read_file" || string(calls[0].Arguments) != `{"path":"go.mod","why":"to see the module"}` || calls[0].ID == "" {
			t.Fatalf("calls %+v", calls)
		}
		ids = append(ids, calls[0].ID)
		if u := evs[len(evs)-2]; u.Kind != provider.UsageEvent || u.Usage.OutputTokens != 7 {
			t.Errorf("usage %+v", u)
		}
		if done := last(evs); done.Kind != provider.DoneEvent || done.StopReason != "tool_calls" {
			t.Errorf("last event %+v", done)
		}
	}
	if ids[0] == ids[1] {
		t.Errorf("two requests' calls have the same id %s", ids[0])
	}

	// On the wire the arguments come in more than one piece.
	resp := post(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"again"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	var pieces []string
	data := frames(t, resp.Body)
	for _, d := range data[:len(data)-1] {
		var c struct {
			Object  string
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				}
			}
			Usage json.RawMessage
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("frame %s: %v", d, err)
		}
		if c.Object != "chat.completion.chunk" || len(c.Usage) != 0 {
			t.Errorf("frame %s", d)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					pieces = append(pieces, tc.Function.Arguments)
				}
			}
		}
	}
	if len(pieces) < 2 || strings.Join(pieces, "") != `{"path":"go.mod","why":"to see the module"}` {
		t.Errorf("argument pieces %q", pieces)
	}
	if data[len(data)-1] != "[DONE]" {
		t.Errorf("last frame %q", data[len(data)-1])
	}
}

func TestAnswersWholeWhenNotStreaming(t *testing.T) {
	srv := chatcompletions.New(t, func(modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "Looking.", Calls: []modelserver.Call{{ID: "call_9", Name: "list_files"}}}
	})
	resp := post(t, srv, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	var c struct {
		Object  string
		Choices []struct {
			Message struct {
				Content   string
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content != "Looking." ||
		c.Choices[0].FinishReason != "tool_calls" || len(c.Choices[0].Message.ToolCalls) != 1 ||
		c.Choices[0].Message.ToolCalls[0].ID != "call_9" || c.Choices[0].Message.ToolCalls[0].Function.Arguments != "{}" ||
		c.Usage.CompletionTokens != 20 {
		t.Errorf("completion %+v", c)
	}
}

func TestErrorStatusWithHeaders(t *testing.T) {
	quota := `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`
	srv := chatcompletions.New(t, func(modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Status: http.StatusTooManyRequests, Body: quota, Headers: map[string]string{"Retry-After": "120"}}
	})
	resp := post(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "120" ||
		resp.Header.Get("Content-Type") != "application/json" || string(body) != quota {
		t.Errorf("answer %d %v %s", resp.StatusCode, resp.Header, body)
	}

	start := time.Now()
	err := last(ask(t, client(srv), "hi")).Err
	var limit *provider.LimitError
	if !errors.Is(err, provider.ErrLimit) || !errors.As(err, &limit) || limit.Until.Sub(start) < 119*time.Second {
		t.Errorf("the client read %v", err)
	}
	if n := len(srv.Turns()); n != 2 {
		t.Errorf("%d turns kept, want the 2 answered with errors", n)
	}
}

func TestListsModels(t *testing.T) {
	srv := chatcompletions.New(t, nil, chatcompletions.Models("llama3.2:latest", "qwen3:8b"))
	info := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: "sk-test"}).Info(context.Background())
	if !info.Ready || info.Models.Default != "llama3.2:latest" || strings.Join(info.Models.List, ",") != "llama3.2:latest,qwen3:8b" {
		t.Errorf("info %+v", info)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Path != "/v1/models" || reqs[0].Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("requests %+v", reqs)
	}

	bare := chatcompletions.New(t, nil)
	resp, err := http.Get(bare.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != `{"data":[],"object":"list"}` {
		t.Errorf("a server without models lists %s", body)
	}
}

func TestUnknownPath(t *testing.T) {
	srv := chatcompletions.New(t, nil)
	resp, err := http.Post(srv.BaseURL()+"/embeddings", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"code":"unknown_url"`) {
		t.Errorf("answer %d %s", resp.StatusCode, body)
	}
}

func TestBrainSeesTheCancel(t *testing.T) {
	held := make(chan error, 1)
	srv := chatcompletions.NewContext(t, func(ctx context.Context, _ modelserver.Turn) modelserver.Reply {
		<-ctx.Done()
		held <- ctx.Err()
		return modelserver.Reply{Text: "too late"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ch, err := client(srv).Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.User, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	for range ch {
	}
	select {
	case err := <-held:
		if err == nil {
			t.Error("the brain's context ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the brain never saw the request cancelled")
	}
}

func TestPacedThinksAndStopsWhenTheClientGoes(t *testing.T) {
	var mu sync.Mutex
	asked := 0
	srv := chatcompletions.New(t, func(modelserver.Turn) modelserver.Reply {
		mu.Lock()
		asked++
		mu.Unlock()
		return modelserver.Reply{Text: strings.Repeat("word ", 20)}
	}, chatcompletions.Paced(1))

	start := time.Now()
	evs := ask(t, client(srv), "hi")
	// 20 ms of thought at least, and 3 ms after each of the 24 chunks.
	if took := time.Since(start); took < 20*time.Millisecond+24*3*time.Millisecond {
		t.Errorf("a paced answer took %v", took)
	}
	if done := last(evs); done.Kind != provider.DoneEvent {
		t.Fatalf("last event %+v", done)
	}

	// A client that goes away while the model thinks is never answered.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	ch, err := client(srv).Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.User, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	for range ch {
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if asked != 1 || len(srv.Turns()) != 2 {
		t.Errorf("the brain was asked %d times for %d turns; want once for 2", asked, len(srv.Turns()))
	}
}

func TestKeepsTurnsFromConcurrentRequests(t *testing.T) {
	srv := chatcompletions.New(t, func(turn modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Calls: []modelserver.Call{{Name: "read_file", Args: json.RawMessage(`{}`)}}}
	})
	p := client(srv)
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			ch, err := p.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.User, Text: fmt.Sprint("request ", i)}}})
			if err != nil {
				t.Error(err)
				return
			}
			for ev := range ch {
				if ev.Kind == provider.ToolCallEvent {
					ids[i] = ev.Call.ID
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" || seen[id] {
			t.Errorf("call ids %q are not all there and distinct", ids)
			break
		}
		seen[id] = true
	}
	firsts := map[string]bool{}
	for _, turn := range srv.Turns() {
		firsts[turn.FirstUser()] = true
	}
	if len(firsts) != len(ids) {
		t.Errorf("turns kept: %v", firsts)
	}
}
