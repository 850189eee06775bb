package anthropic

import (
	"strings"
	"testing"

	"conch/backend/provider"
	"conch/backend/provider/internal/wiretest"
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
			wiretest.Midstream(t, e)
			return true
		})
		wiretest.Ends(t, last)
	})
}
