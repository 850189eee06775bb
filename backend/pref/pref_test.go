package pref

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestRetentionDays(t *testing.T) {
	if d := Defaults().RetentionDays; d != 90 {
		t.Fatalf("a new home keeps finished tasks %d days, want 90", d)
	}
	for _, tc := range []struct {
		days int
		ok   bool
	}{{0, true}, {1, true}, {90, true}, {MaxRetentionDays, true}, {-1, false}, {MaxRetentionDays + 1, false}} {
		p := Defaults()
		p.RetentionDays = tc.days
		err := p.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("RetentionDays %d: Validate = %v, want ok %v", tc.days, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "0 (forever)") {
			t.Errorf("RetentionDays %d: %q does not say what is allowed", tc.days, err)
		}
	}
}

// Preferences saved before retentionDays existed read as the default, the
// way the store decodes them (onto Defaults).
func TestRetentionDaysMissingKeepsTheDefault(t *testing.T) {
	p := Defaults()
	if err := json.Unmarshal([]byte(`{"limits":{"background":2,"helper":4}}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.RetentionDays != DefaultRetentionDays {
		t.Fatalf("RetentionDays = %d, want %d", p.RetentionDays, DefaultRetentionDays)
	}
	if err := json.Unmarshal([]byte(`{"retentionDays":0}`), &p); err != nil || p.RetentionDays != 0 {
		t.Fatalf("an explicit 0 (forever) reads as %d, %v", p.RetentionDays, err)
	}
}

func TestJobCap(t *testing.T) {
	for _, tc := range []struct {
		cap float64
		ok  bool
	}{{0, true}, {2.5, true}, {1e5, true}, {-0.01, false}, {1e5 + 1, false}, {math.NaN(), false}} {
		p := Defaults()
		p.Budget.JobCap = tc.cap
		if err := p.Validate(); (err == nil) != tc.ok {
			t.Errorf("JobCap %v: Validate = %v, want ok %v", tc.cap, err, tc.ok)
		}
	}
}

func TestTheShellIsNoFallback(t *testing.T) {
	p := Defaults()
	p.LimitFallback = "shell"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "shell") {
		t.Fatalf("Validate = %v, want the shell refused as the fallback", err)
	}
	p.LimitFallback = "anthropic"
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate = %v", err)
	}
}
