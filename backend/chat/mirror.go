package chat

import (
	"errors"
	"fmt"

	"conch/backend/ask"
	"conch/backend/conversation"
)

// errOnHost is a turn asked of a chat whose turns run on a host.
func errOnHost(c conversation.Conversation) error {
	return fmt.Errorf("%w: this chat works on %s, where its task runs its turns; send from the chat it came from", ErrInvalid, c.Host)
}

// Mirror brings home what chat id's twin on its host did: the messages it
// has beyond this chat's newest, seq for seq; whether it replies, and the
// question it waits on (a task's chat's is answered through its task,
// which asks it here); what it spent beyond
// what this chat has, added here, to the chat above and to the month; and
// its taint. It returns the seq of the newest message this chat now has.
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
	msgs := newer(c.LastSeq, tw.Messages)
	cost := max(tw.Spent-c.Spent, 0)
	moved := askID(c.Ask) != askID(tw.Ask) || c.Running != tw.Running
	last := c.LastSeq
	if len(msgs) > 0 || cost > 0 || moved {
		last, err = m.keepTwin(e, tw, cost, msgs)
	}
	e.mu.Unlock()
	if err != nil {
		return c.LastSeq, err
	}
	m.spendParent(c, cost)
	if tw.Tainted {
		m.taint(e, "the task read content from outside on "+c.Host)
	}
	return last, nil
}

// newer are the twin's messages that follow seq last, in one unbroken
// run, numbered again from there (the same numbers).
func newer(last uint64, twin []conversation.Message) []conversation.Message {
	var msgs []conversation.Message
	next := last + 1
	for _, msg := range twin {
		if msg.Seq < next {
			continue
		}
		if msg.Seq > next {
			break
		}
		next++
		msg.Seq = 0 // updateLocked numbers it after LastSeq: the same number
		msgs = append(msgs, msg)
	}
	return msgs
}

// keepTwin stores what the twin is at (replying, asking, cost spent
// beyond what e has) with its newer messages, and records the spend in
// the month; call with e.mu held. It returns the newest seq e has.
func (m *Manager) keepTwin(e *entry, tw conversation.Twin, cost float64, msgs []conversation.Message) (uint64, error) {
	if cost > 0 && m.cfg.Spending != nil {
		if err := m.cfg.Spending.Spend(cost); err != nil {
			return e.c.LastSeq, errors.Join(errors.New("record this month's spend"), err)
		}
	}
	got, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Spent += cost
		c.Running = tw.Running
		c.Ask = nil
		if tw.Ask != nil {
			q := *tw.Ask
			c.Ask = &q
		}
		return nil
	}, msgs...)
	return got.LastSeq, err
}

func askID(q *ask.Question) string {
	if q == nil {
		return ""
	}
	return q.ID
}
