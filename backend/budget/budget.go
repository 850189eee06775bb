// Package budget keeps what Conch spends each month across every chat, task
// and helper, against the monthly budget in preferences.
package budget

import (
	"fmt"
	"sync"
	"time"

	"conch/backend/pref"
)

// Store is where monthly totals live.
type Store interface {
	MonthSpend(month string) (float64, error)
	PutMonthSpend(month string, usd float64) error
}

// Monthly adds up spend per calendar month (local time) and says whether
// the month's budget is spent. Safe for concurrent use; it must be the only
// writer of the totals (one Conch owns its store).
type Monthly struct {
	store Store
	prefs func() pref.Preferences
	now   func() time.Time

	mu sync.Mutex
}

// New returns the monthly budget; prefs gives the preferences now (their
// monthly budget, 0 for none, and their price table).
func New(s Store, prefs func() pref.Preferences) *Monthly {
	return &Monthly{store: s, prefs: prefs, now: time.Now}
}

// Prices is the price table in the preferences now.
func (m *Monthly) Prices() map[string]pref.Price {
	if p := m.prefs().Prices; p != nil {
		return p
	}
	return pref.DefaultPrices()
}

func (m *Monthly) month() string { return m.now().Format("2006-01") }

// Month returns this month's budget (0: none) and what is spent so far.
func (m *Monthly) Month() (limit, spent float64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	spent, err = m.store.MonthSpend(m.month())
	return m.prefs().Budget.Monthly, spent, err
}

// Spend adds usd to this month's total, durably.
func (m *Monthly) Spend(usd float64) error {
	if usd <= 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	month := m.month()
	cur, err := m.store.MonthSpend(month)
	if err != nil {
		return err
	}
	if err := m.store.PutMonthSpend(month, cur+usd); err != nil {
		return fmt.Errorf("spend $%.4f: %w", usd, err)
	}
	return nil
}

// Exceeded says, in a sentence for the person, why nothing more may be
// spent this month; "" when something may.
func (m *Monthly) Exceeded() (string, error) {
	limit, spent, err := m.Month()
	if err != nil || limit <= 0 || spent < limit {
		return "", err
	}
	return fmt.Sprintf("This month's budget of %s is spent (%s so far). Raise it in Settings to carry on.", USD(limit), USD(spent)), nil
}

// USD says an amount of money the way a person reads it: cents from a cent
// up ("$30.35"), and enough digits below one to show it is not nothing
// ("$0.0042").
func USD(x float64) string {
	if x < 0 {
		return "-" + USD(-x)
	}
	if x == 0 || x >= 0.01 {
		return fmt.Sprintf("$%.2f", x)
	}
	return fmt.Sprintf("$%.4f", x)
}
