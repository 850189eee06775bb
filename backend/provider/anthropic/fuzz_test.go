package anthropic

import (
	"strings"
	"testing"

	"conch/backend/provider"
)

// FuzzDecode feeds arbitrary streams to the decoder: it must not panic, and
// must end with exactly one DoneEvent or ErrorEvent.
func FuzzDecode(f *testing.F) {
	f.Add(strings.Join(recorded, ""))
	f.Add(strings.Join(recorded[:12], ""))
	f.Add(ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Add(ev("content_block_stop", `{"type":"content_block_stop","index":-1}`) + ev("message_delta", `{"type":"message_delta","delta":null,"usage":{"output_tokens":null}}`))
	f.Add("event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n: comment\n\ndata: {\"type\":\"message_stop\"}")
	f.Add(ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":""}}`) + ev("content_block_stop", `{"type":"content_block_stop","index":0}`))
	f.Fuzz(func(t *testing.T, in string) {
		p := New(Config{Name: "Fuzz"})
		d := newDecoder("Fuzz", p.classify)
		last := d.decode(strings.NewReader(in), func(e provider.Event) bool {
			if e.Kind == provider.DoneEvent || e.Kind == provider.ErrorEvent {
				t.Fatalf("terminal event %s emitted mid-stream", e.Kind)
			}
			if e.Kind == provider.ToolCallEvent && (e.Call == nil || e.Call.Name == "") {
				t.Fatalf("tool call without a name: %+v", e.Call)
			}
			if e.Kind == provider.UsageEvent && e.Usage == nil {
				t.Fatal("usage event without usage")
			}
			return true
		})
		switch last.Kind {
		case provider.DoneEvent:
		case provider.ErrorEvent:
			if last.Err == nil || last.Err.Error() == "" {
				t.Fatal("error event without an error")
			}
		default:
			t.Fatalf("decode ended with %s", last.Kind)
		}
	})
}
