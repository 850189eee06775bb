package chat

import (
	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/task"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Send stores the person's message and starts a turn in the background. A
// conversation runs one turn at a time: while one runs, Send is refused
// with ErrConflict.
func (m *Manager) Send(id, text string) (conversation.Message, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return conversation.Message{}, err
	}
	defer release()
	if strings.TrimSpace(text) == "" {
		return conversation.Message{}, fmt.Errorf("%w: text is empty", ErrInvalid)
	}
	if len(text) > maxText {
		return conversation.Message{}, fmt.Errorf("%w: text is longer than %d bytes", ErrInvalid, maxText)
	}
	if c := m.snapshot(e); onHost(c) {
		return m.sendThere(c, text)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.life.Open() {
		return conversation.Message{}, errors.New("chats are not running (Conch is starting or closing)")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c.Host != "" {
		return conversation.Message{}, errOnHost(e.c)
	}
	if e.cancel != nil {
		return conversation.Message{}, fmt.Errorf("conversation %s is still replying; stop it or wait: %w", id, ErrConflict)
	}
	msg := m.message(conversation.User)
	msg.Text = text
	if _, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		if c.Title == "" {
			c.Title = task.TitleFrom(text)
		}
		c.Running = true
		return nil
	}, msg); err != nil {
		return conversation.Message{}, err
	}
	msg.Seq = e.c.LastSeq
	msg.ConversationID = id
	return msg, m.startTurnLocked(e)
}

// startTurnLocked starts a turn of e in the background; the caller holds
// e.mu and has checked that no turn runs and the manager is open.
func (m *Manager) startTurnLocked(e *entry) error {
	if !e.c.Running {
		if _, err := m.updateLocked(e, func(c *conversation.Conversation) error {
			c.Running = true
			return nil
		}); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(m.life.Context())
	e.cancel, e.done = cancel, make(chan struct{})
	e.began, e.spentFrom = m.cfg.Now().UTC(), e.c.Spent
	m.life.WG.Add(1)
	e.Hold() // the turn's own, let go when it has settled
	go m.turn(ctx, e)
	return nil
}

// StopTurn stops the running turn at once: the provider call and any
// running tool are cancelled. It waits briefly for the turn to end and
// returns the conversation; with no turn running it is ErrConflict.
func (m *Manager) StopTurn(id string) (conversation.Conversation, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return conversation.Conversation{}, err
	}
	defer release()
	if c := m.snapshot(e); onHost(c) {
		return m.stopThere(c)
	}
	e.mu.Lock()
	if e.cancel == nil {
		c := e.c.Clone()
		e.mu.Unlock()
		return c, fmt.Errorf("conversation %s is not replying: %w", id, ErrConflict)
	}
	e.cancel(errStopped)
	done := e.done
	e.mu.Unlock()
	select {
	case <-done:
	case <-time.After(stopGrace):
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.Clone(), nil
}

// Answer answers the conversation's pending question. A second answer, or
// one for a question no longer asked, is refused with ErrConflict.
func (m *Manager) Answer(id, askID string, allow bool) (conversation.Conversation, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return conversation.Conversation{}, err
	}
	defer release()
	if askID == "" {
		return conversation.Conversation{}, fmt.Errorf("%w: askId is empty", ErrInvalid)
	}
	if c := m.snapshot(e); onHost(c) {
		return m.answerThere(c, askID, allow)
	}
	e.mu.Lock()
	if e.c.Host != "" {
		e.mu.Unlock()
		return m.snapshot(e), fmt.Errorf("%w: this chat's questions are its task's, asked on %s: answer them on the task (POST /api/tasks/%s/answer)", ErrInvalid, e.c.Host, e.c.Origin.TaskID)
	}
	if e.fwd != "" && e.fwd == askID && e.behalf != nil && e.behalf.Answer != nil {
		// A task's question: its task takes the answer (and goes back to
		// running); the chat records it when the turn hears back.
		answer := e.behalf.Answer
		e.mu.Unlock()
		if err := answer(askID, allow); err != nil {
			return m.snapshot(e), err // the task's own refusal (conflict, not found)
		}
		return m.snapshot(e), nil
	}
	defer e.mu.Unlock()
	if e.ask == nil || e.ask.id != askID || e.c.Ask == nil {
		return e.c.Clone(), fmt.Errorf("that question is no longer waiting for an answer (it was answered, withdrawn or timed out): %w", ErrConflict)
	}
	ans := ask.Declined
	if allow {
		ans = ask.Allowed
	}
	c, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Ask = nil
		return nil
	}, m.answerMessage(*e.c.Ask, ans))
	if err != nil {
		return c, err
	}
	e.ask.answer <- allow
	e.ask = nil
	return c, nil
}
