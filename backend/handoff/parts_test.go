package handoff

import (
	"encoding/json"
	"strings"
	"testing"

	"conch/backend/provider"
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
	} {
		_, err := parseParts(json.RawMessage(c.args))
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
		parts, err := parseParts(json.RawMessage(args))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if len(parts) < 1 || len(parts) > MaxParts {
			t.Fatalf("%d parts accepted", len(parts))
		}
		for _, p := range parts {
			if strings.TrimSpace(p.Title) == "" || strings.TrimSpace(p.Instructions) == "" || len(p.Title) > 200 {
				t.Fatalf("a bad part accepted: %+v", p)
			}
		}
	})
}

func TestModelForNeverCarriesTheChatsModelElsewhere(t *testing.T) {
	own := engine{id: "main", info: provider.Info{Models: provider.Models{Default: "big", Fast: "small", List: []string{"big", "small", "huge"}}}}
	other := engine{id: "codex", info: provider.Info{Name: "Codex CLI", Models: provider.Models{Default: "gpt-5", List: []string{"gpt-5", "gpt-5-mini"}}}}
	for _, c := range []struct {
		e            engine
		choice, want string
		err          string
	}{
		{own, "", "small", ""},
		{own, "fast", "small", ""},
		{own, "same", "huge", ""},
		{own, "big", "big", ""},
		{other, "fast", "gpt-5", ""}, // no fast model: its default
		{other, "same", "gpt-5", ""}, // not the chat's huge
		{other, "gpt-5-mini", "gpt-5-mini", ""},
		{other, "huge", "", `Codex CLI has no model "huge"`},
	} {
		got, err := modelFor(c.e, c.choice, "main", "huge")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %q: %q %v, want error %q", c.e.id, c.choice, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %q: %q %v, want %q", c.e.id, c.choice, got, err, c.want)
		}
	}
}

func TestPickTakesOnlyReadyProvidersThatAsk(t *testing.T) {
	engines := []engine{
		{id: "main", info: provider.Info{Name: "Main", Ready: true, CanAsk: true}},
		{id: "codex", info: provider.Info{Name: "Codex CLI", Ready: true, CanAsk: false}},
		{id: "down", info: provider.Info{Name: "Down", Ready: false, CanAsk: true, Reason: "not running"}},
	}
	if e, err := pick(engines, "", "main", false); err != nil || e.id != "main" {
		t.Errorf("the chat's own: %v %v", e.id, err)
	}
	if e, err := pick(engines, "MAIN", "x", false); err != nil || e.id != "main" {
		t.Errorf("by name, any case: %v %v", e.id, err)
	}
	if _, err := pick(engines, "Codex CLI", "main", false); err == nil || !strings.Contains(err.Error(), "cannot ask") {
		t.Errorf("a provider that cannot ask: %v", err)
	}
	if _, err := pick(engines, "down", "main", false); err == nil || !strings.Contains(err.Error(), "Down is not ready: not running. Providers that can take work: main (Main)") {
		t.Errorf("not ready: %v", err)
	}
	if e, err := pick(engines, "down", "main", true); err != nil || e.id != "down" {
		t.Errorf("not ready, taken to fail at once: %v %v", e.id, err)
	}
}
