package chat

import (
	"errors"
	"fmt"

	"conch/backend/conversation"
)

// errOnHost is a turn asked of a chat whose turns run on a host.
func errOnHost(c conversation.Conversation) error {
	return fmt.Errorf("%w: this chat works on %s, where its task runs its turns; send from the chat it came from", ErrInvalid, c.Host)
}

// Mirror brings home what chat id's twin on its host did: the messages it
// has beyond this chat's newest, seq for seq (questions stay with the
// task, which asks them here); what it spent beyond what this chat has,
// added here, to the chat above and to the month; and its taint. It
// returns the seq of the newest message this chat now has.
func (m *Manager) Mirror(id string, tw conversation.Twin) (uint64, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return 0, err
	}
	defer release()
	e.mu.Lock()
	c := e.c.Clone()
	if c.Host == "" {
		e.mu.Unlock()
		return 0, fmt.Errorf("%w: chat %s is not a host's", ErrInvalid, id)
	}
	var msgs []conversation.Message
	next := c.LastSeq + 1
	for _, msg := range tw.Messages {
		if msg.Seq < next {
			continue
		}
		if msg.Seq > next {
			break
		}
		next++
		msg.Ask, msg.TaskEvent = nil, nil
		msgs = append(msgs, msg)
	}
	cost := tw.Spent - c.Spent
	if cost < 0 {
		cost = 0
	}
	if len(msgs) == 0 && cost == 0 {
		e.mu.Unlock()
		if tw.Tainted {
			m.taint(e, "the task read content from outside on "+c.Host)
		}
		return c.LastSeq, nil
	}
	if cost > 0 && m.cfg.Spending != nil {
		if err := m.cfg.Spending.Spend(cost); err != nil {
			e.mu.Unlock()
			return c.LastSeq, errors.Join(errors.New("record this month's spend"), err)
		}
	}
	// The seqs are the twin's: updateLocked numbers after LastSeq, in
	// order, which is the same numbering.
	for i := range msgs {
		msgs[i].Seq = 0
	}
	got, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Spent += cost
		return nil
	}, msgs...)
	e.mu.Unlock()
	if err != nil {
		return c.LastSeq, err
	}
	m.spendParent(c, cost)
	if tw.Tainted {
		m.taint(e, "the task read content from outside on "+c.Host)
	}
	return got.LastSeq, nil
}
