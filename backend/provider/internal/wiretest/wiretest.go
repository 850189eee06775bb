// Package wiretest holds what the model APIs' tests share: handlers that
// serve the real wire format (streamed chunks, error answers, a server that
// stalls), a reader that collects a stream to its end, golden request
// bodies, and the checks every decoder's fuzz target makes.
package wiretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"conch/backend/provider"
)

// SSE serves chunks as a streaming response, flushing after each one, the
// way a real server trickles them out.
func SSE(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			_, _ = io.WriteString(w, c)
			w.(http.Flusher).Flush()
		}
	}
}

// Status answers code with a JSON body and the given header pairs.
func Status(code int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// Stall holds a request until the client goes away. The server only
// notices a closed connection once the body is read, so it is read first.
func Stall(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// Collect reads a stream to its end, failing if it does not end in time or
// ends with anything but a DoneEvent or an ErrorEvent.
func Collect(t testing.TB, ch <-chan provider.Event) []provider.Event {
	t.Helper()
	var evs []provider.Event
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				if len(evs) == 0 {
					t.Fatal("stream closed without events")
				}
				if last := evs[len(evs)-1].Kind; last != provider.DoneEvent && last != provider.ErrorEvent {
					t.Fatalf("stream ended with %s", last)
				}
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("stream did not end; got %d events", len(evs))
		}
	}
}

// Stream streams req from p to its end.
func Stream(t testing.TB, p provider.Provider, req provider.Request) []provider.Event {
	t.Helper()
	ch, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return Collect(t, ch)
}

// Hello is the smallest request: one user message.
func Hello() provider.Request {
	return provider.Request{Messages: []provider.Message{{Role: provider.User, Text: "hi"}}}
}

// LastErr is the error a stream ended with, failing when it ended well.
func LastErr(t testing.TB, evs []provider.Event) error {
	t.Helper()
	last := evs[len(evs)-1]
	if last.Kind != provider.ErrorEvent || last.Err == nil {
		t.Fatalf("last event is %+v, want an error", last)
	}
	return last.Err
}

// Golden compares a JSON body with testdata/name, ignoring layout; update
// rewrites the file first.
func Golden(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	pretty.WriteByte('\n')
	file := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(file, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	var compact, wantCompact bytes.Buffer
	if err := json.Compact(&compact, got); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&wantCompact, want); err != nil {
		t.Fatalf("golden %s: %v", file, err)
	}
	if compact.String() != wantCompact.String() {
		t.Fatalf("request body differs from %s:\n%s", file, pretty.String())
	}
}

// StopsWhenCancelled streams from p while its server stalls after the
// first event (of kind first), cancels, and checks that the stream closes
// within a second with the cancellation as its error.
func StopsWhenCancelled(t *testing.T, p provider.Provider, first provider.EventKind) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := p.Stream(ctx, Hello())
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Kind != first {
		t.Fatalf("first event %+v", ev)
	}
	cancel()
	start := time.Now()
	var last provider.Event
	for {
		select {
		case ev, ok := <-ch:
			if ok {
				last = ev
				continue
			}
		case <-time.After(time.Second):
			t.Fatal("stream still open 1s after cancel")
		}
		break
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("closed after %v", d)
	}
	if last.Kind != provider.ErrorEvent || !errors.Is(last.Err, context.Canceled) {
		t.Fatalf("last event %+v", last)
	}
}

// Midstream checks an event a decoder sent before its end: no terminal
// event, no tool call without a name, no usage event without usage.
func Midstream(t *testing.T, ev provider.Event) {
	t.Helper()
	switch {
	case ev.Kind == provider.DoneEvent || ev.Kind == provider.ErrorEvent:
		t.Fatalf("terminal event %s emitted mid-stream", ev.Kind)
	case ev.Kind == provider.ToolCallEvent && (ev.Call == nil || ev.Call.Name == ""):
		t.Fatalf("tool call without a name: %+v", ev.Call)
	case ev.Kind == provider.UsageEvent && ev.Usage == nil:
		t.Fatal("usage event without usage")
	}
}

// Ends checks a decoder's last event: done, or an error that says why.
func Ends(t *testing.T, last provider.Event) {
	t.Helper()
	switch last.Kind {
	case provider.DoneEvent:
	case provider.ErrorEvent:
		if last.Err == nil || last.Err.Error() == "" {
			t.Fatal("error event without an error")
		}
	default:
		t.Fatalf("decode ended with %s", last.Kind)
	}
}
