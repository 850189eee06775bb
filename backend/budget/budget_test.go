package budget

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"conch/backend/pref"
	"conch/backend/store"
)

func TestMonthlySpendAddsUpDurablyAndStopsAtTheBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conch.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	limit := 1.0
	m := New(st, func() pref.Preferences { p := pref.Defaults(); p.Budget.Monthly = limit; return p })
	m.now = func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.Local) }
	if why, err := m.Exceeded(); why != "" || err != nil {
		t.Fatalf("fresh month: %q %v", why, err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.Spend(0.025) }()
	}
	wg.Wait()
	if _, spent, _ := m.Month(); spent < 0.9999 || spent > 1.0001 {
		t.Fatalf("spent %v, want 1.0 (concurrent spends lost)", spent)
	}
	why, err := m.Exceeded()
	if err != nil || why != "This month's budget of $1.00 is spent ($1.00 so far). Raise it in Settings to carry on." {
		t.Fatalf("exceeded: %q %v", why, err)
	}
	limit = 0
	if why, _ := m.Exceeded(); why != "" {
		t.Fatalf("no budget set, yet %q", why)
	}
	// A new month starts from nothing; the old one is kept.
	m.now = func() time.Time { return time.Date(2026, 12, 1, 0, 0, 1, 0, time.Local) }
	if _, spent, _ := m.Month(); spent != 0 {
		t.Fatalf("december starts at %v", spent)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if v, err := st2.MonthSpend("2026-11"); err != nil || v < 0.9999 || v > 1.0001 {
		t.Fatalf("after reopen: %v %v", v, err)
	}
}

func TestPricesComeFromPreferences(t *testing.T) {
	custom := map[string]pref.Price{"my-model": {Input: 1, Output: 2}}
	m := New(nil, func() pref.Preferences { return pref.Preferences{Prices: custom} })
	if got := m.Prices(); len(got) != 1 || got["my-model"].Output != 2 {
		t.Fatalf("prices %v", got)
	}
	m = New(nil, func() pref.Preferences { return pref.Preferences{} })
	if got := m.Prices(); got["gpt-4o"].Input != 2.5 {
		t.Fatalf("no table in preferences should use the defaults, got %v", got)
	}
}

func TestUSDReadsLikeMoney(t *testing.T) {
	for x, want := range map[float64]string{0: "$0.00", 30.35: "$30.35", 2.02: "$2.02", 0.0042: "$0.0042", 1.5: "$1.50", -0.5: "-$0.50"} {
		if got := USD(x); got != want {
			t.Errorf("USD(%v) = %q, want %q", x, got, want)
		}
	}
}
