package engine

import (
	"strings"
	"testing"

	"conch/backend/provider"
)

func TestModelForNeverCarriesTheChatsModelElsewhere(t *testing.T) {
	own := Engine{ID: "main", Info: provider.Info{Models: provider.Models{Default: "big", Fast: "small", List: []string{"big", "small", "huge"}}}}
	other := Engine{ID: "codex", Info: provider.Info{Name: "Codex CLI", Models: provider.Models{Default: "gpt-5", List: []string{"gpt-5", "gpt-5-mini"}}}}
	for _, c := range []struct {
		e            Engine
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
		got, err := ModelFor(c.e, c.choice, "main", "huge")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %q: %q %v, want error %q", c.e.ID, c.choice, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %q: %q %v, want %q", c.e.ID, c.choice, got, err, c.want)
		}
	}
}

func TestPickTakesOnlyReadyProvidersThatAsk(t *testing.T) {
	engines := []Engine{
		{ID: "main", Info: provider.Info{Name: "Main", Ready: true, CanAsk: true}},
		{ID: "codex", Info: provider.Info{Name: "Codex CLI", Ready: true, CanAsk: false}},
		{ID: "down", Info: provider.Info{Name: "Down", Ready: false, CanAsk: true, Reason: "not running"}},
	}
	if e, err := Pick(engines, "", "main", false); err != nil || e.ID != "main" {
		t.Errorf("the chat's own: %v %v", e.ID, err)
	}
	if e, err := Pick(engines, "MAIN", "x", false); err != nil || e.ID != "main" {
		t.Errorf("by name, any case: %v %v", e.ID, err)
	}
	if _, err := Pick(engines, "Codex CLI", "main", false); err == nil || !strings.Contains(err.Error(), "cannot ask") {
		t.Errorf("a provider that cannot ask: %v", err)
	}
	if _, err := Pick(engines, "down", "main", false); err == nil || !strings.Contains(err.Error(), "Down is not ready: not running. Providers that can take work: main (Main)") {
		t.Errorf("not ready: %v", err)
	}
	if e, err := Pick(engines, "down", "main", true); err != nil || e.ID != "down" {
		t.Errorf("not ready, taken to fail at once: %v %v", e.ID, err)
	}
}

func TestCarryOverKeepsFastFast(t *testing.T) {
	from := provider.Info{Models: provider.Models{Default: "big", Fast: "small", List: []string{"big", "small", "shared"}}}
	to := Engine{ID: "other", Info: provider.Info{Models: provider.Models{Default: "large", Fast: "tiny", List: []string{"large", "tiny", "shared"}}}}
	for model, want := range map[string]string{"small": "tiny", "shared": "shared", "big": "large", "": "large"} {
		if got := CarryOver(from, to, model); got != want {
			t.Errorf("CarryOver(%q) = %q, want %q", model, got, want)
		}
	}
	noFast := Engine{ID: "x", Info: provider.Info{Models: provider.Models{Default: "only"}}}
	if got := CarryOver(from, noFast, "small"); got != "only" {
		t.Errorf("to a provider without a fast model: %q", got)
	}
}
