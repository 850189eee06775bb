package chat

import (
	"errors"
	"fmt"
	"time"

	"conch/backend/budget"
	"conch/backend/conversation"
)

// ErrSpendLimit is a turn stopped before a model call because its chat
// (or what it spends as part of) or the month has spent what it may.
var ErrSpendLimit = errors.New("spend limit reached")

// Spend limits, by what reached its limit (a Config.Limit may name more).
const (
	LimitChat  = "chat"
	LimitMonth = "month"
)

// SpendLimitError says which limit was reached, in the person's words.
type SpendLimitError struct {
	// Kind is LimitChat, LimitMonth, or one a Config.Limit names.
	Kind    string
	Message string
	// Until is when it lifts by itself (a new month); zero when the
	// person must raise it.
	Until time.Time
}

func (e *SpendLimitError) Error() string        { return e.Message }
func (e *SpendLimitError) Is(target error) bool { return target == ErrSpendLimit }

// OwnLimit is c's own spend limit, if c has spent it, else nil.
func OwnLimit(c conversation.Conversation) *SpendLimitError {
	if c.Limit > 0 && c.Spent >= c.Limit {
		return &SpendLimitError{Kind: LimitChat, Message: fmt.Sprintf("Stopped: this chat has spent %s of its %s limit. Raise the limit to carry on.", budget.USD(c.Spent), budget.USD(c.Limit))}
	}
	return nil
}

// limitOf is c's limit: Config.Limit's rule, else its own.
func (m *Manager) limitOf(c conversation.Conversation) *SpendLimitError {
	if m.cfg.Limit != nil {
		return m.cfg.Limit(c)
	}
	return OwnLimit(c)
}

// OverMonth is the monthly budget's limit, or nil.
func (m *Manager) OverMonth() (*SpendLimitError, error) {
	if m.cfg.Spending == nil {
		return nil, nil
	}
	why, err := m.cfg.Spending.Exceeded()
	if err != nil || why == "" {
		return nil, err
	}
	now := m.cfg.Now()
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, now.Location())
	return &SpendLimitError{Kind: LimitMonth, Message: "Stopped: " + why, Until: next}, nil
}

// spendParent adds what a chat that came from another spent to that one:
// it spends as part of it.
func (m *Manager) spendParent(c conversation.Conversation, cost float64) {
	if cost <= 0 || c.Origin.ParentID == "" {
		return
	}
	if pe, release, err := m.acquire(c.Origin.ParentID); err == nil {
		_, _ = m.update(pe, func(p *conversation.Conversation) error {
			p.Spent += cost
			return nil
		})
		release()
	}
}

// SetJobCap sets what chat id's job may spend together.
func (m *Manager) SetJobCap(id string, limit float64) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	_, err = m.update(e, func(c *conversation.Conversation) error { c.JobCap = limit; return nil })
	return err
}
