package handoff

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParsePartsChecksAtTheEdge(t *testing.T) {
	for _, c := range []struct {
		args string
		want string // "" = accepted
	}{
		{`{"parts":[{"title":"a","instructions":"b"}]}`, ""},
		{`{"parts":[{"title":"a","instructions":"b","model":"fast","worktree":true,"provider":"codex"}]}`, ""},
		{`{"parts":[]}`, "1 to 6 parts, got 0"},
		{`{}`, `"parts" is required`},
		{`[]`, "not a JSON object"},
		{`{"parts":[{"title":"a"}]}`, `"instructions" is required`},
		{`{"parts":[{"title":" ","instructions":"b"}]}`, "needs a title and instructions"},
		{`{"parts":[{"title":"a","instructions":"b","colour":"red"}]}`, "unknown field"},
		{`{"parts":[1]}`, "not a JSON object"},
		{`{"parts":[{"title":"a","instructions":"b"}],"extra":1}`, "unknown field"},
		{`{"parts":[` + strings.Repeat(`{"title":"a","instructions":"b"},`, 6) + `{"title":"a","instructions":"b"}]}`, "got 7"},
		{`{"parts":[{"title":"a","instructions":"b"}],"cap":2.5}`, ""},
		{`{"parts":[{"title":"a","instructions":"b"}],"cap":-1}`, "cap must be between"},
		{`{"parts":[{"title":"a","instructions":"b"}],"cap":"lots"}`, "cap"},
		{`{"parts":[{"title":"a","instructions":"b","check":"go test ./..."}]}`, ""},
	} {
		_, _, err := parseParts(json.RawMessage(c.args))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", c.args, err, c.want)
		}
	}
}

// FuzzParseParts: any arguments a model sends give parts within bounds or a
// clear error, never a panic.
func FuzzParseParts(f *testing.F) {
	f.Add(`{"parts":[{"title":"a","instructions":"b"}]}`)
	f.Add(`{"parts":[{"title":"a","instructions":"b","model":"same","worktree":true,"provider":"x"},{"title":"c","instructions":"d"}]}`)
	f.Add(`{"parts":null}`)
	f.Add(`{"parts":[{"title":"a","instructions":"b","worktree":"yes"}]}`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, args string) {
		parts, jobCap, err := parseParts(json.RawMessage(args))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if len(parts) < 1 || len(parts) > MaxParts {
			t.Fatalf("%d parts accepted", len(parts))
		}
		if jobCap != nil && (*jobCap < 0 || *jobCap > 1e5) {
			t.Fatalf("a cap of %v accepted", *jobCap)
		}
		for _, p := range parts {
			if strings.TrimSpace(p.Title) == "" || strings.TrimSpace(p.Instructions) == "" || len(p.Title) > 200 {
				t.Fatalf("a bad part accepted: %+v", p)
			}
		}
	})
}
