package openai

import (
	"strings"
	"testing"

	"conch/backend/provider"
	"conch/backend/provider/internal/wiretest"
)

// FuzzDecode feeds arbitrary streams to the decoder: it must not panic, and
// must end with exactly one DoneEvent or ErrorEvent.
func FuzzDecode(f *testing.F) {
	f.Add(data(roleChunk) + data(textChunk("hi")) + data(stopChunk) + data(usageChunk) + "data: [DONE]\n\n")
	f.Add(": OPENROUTER PROCESSING\n\n" + data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}}]}`) +
		data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}`) + "data: [DONE]\n\n")
	f.Add(data(`{"error":{"code":429,"message":"slow down"}}`))
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"\r\ndata: }}]}\r\n\r\n")
	f.Add("data: [DONE]")
	f.Add(data(`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"g","arguments":{"y":2}}}]},"finish_reason":"stop"}]}`))
	f.Add("event: x\ndata:\n\n:\n\ndata: {}\n")
	f.Fuzz(func(t *testing.T, in string) {
		p := New(Config{Name: "Fuzz"})
		d := newDecoder("Fuzz", p.classify)
		last := d.decode(strings.NewReader(in), func(ev provider.Event) bool {
			wiretest.Midstream(t, ev)
			return true
		})
		wiretest.Ends(t, last)
	})
}
