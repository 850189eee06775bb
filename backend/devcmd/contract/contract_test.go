package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The contract in the tree is what the Go types say now: a change to a
// record, a status, an event name, an error code or a binding that did not
// run `go generate ./...` fails here (and so `make test`).
func TestTheContractInTheTreeIsCurrent(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, Path))
	if err != nil {
		t.Fatalf("%v: run `go generate ./...`", err)
	}
	if string(got) != string(want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s is stale (line %d is %q, the Go types say %q): run `go generate ./...`", Path, i+1, g, w)
			}
		}
	}
}

// Every status, event name and error code reaches the contract.
func TestTheContractHasEveryConstant(t *testing.T) {
	b, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NeedsYou: 'needs-you',", "Interrupted: 'interrupted',", "MessageDelta: 'message.delta',",
		"InvalidTransition: 'invalid_transition',", "ToolCall: 'tool-call',", "TimedOut: 'timed-out',",
		"ReadOutput(id: string, offset: number, max: number): Promise<OutputChunk>;", "DeleteTask(id: string): Promise<void>;",
		"ask: Question | null;", "answer?: AskAnswer;"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the contract lacks %q", want)
		}
	}
}
