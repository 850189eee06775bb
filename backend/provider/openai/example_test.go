package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"conch/backend/provider"
	"conch/backend/provider/openai"
)

// A provider streams a reply as events; the last one is done or an error.
func ExampleProvider_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`+"\n\n")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	cfg := openai.Ollama()
	cfg.BaseURL = srv.URL + "/v1"
	p := openai.New(cfg)
	events, err := p.Stream(context.Background(), provider.Request{
		Model:    "llama3.2",
		Messages: []provider.Message{{Role: provider.User, Text: "Say hello"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev := range events {
		switch ev.Kind {
		case provider.TextDelta:
			fmt.Println("text:", ev.Text)
		case provider.UsageEvent:
			fmt.Println("tokens:", ev.Usage.InputTokens, ev.Usage.OutputTokens)
		case provider.DoneEvent:
			fmt.Println("done:", ev.StopReason)
		case provider.ErrorEvent:
			fmt.Println("error:", ev.Err)
		}
	}
	// Output:
	// text: Hello
	// tokens: 5 1
	// done: stop
}
