package chat

import (
	"errors"

	"conch/backend/conversation"
)

// Snapshot returns the conversation as it stands now.
func (m *Manager) Snapshot(id string) (conversation.Conversation, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return conversation.Conversation{}, err
	}
	defer release()
	return m.snapshot(e), nil
}

// PostTaskEvent appends a task's status change to chat id.
func (m *Manager) PostTaskEvent(id string, ev conversation.TaskUpdate) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	msg := m.message(conversation.TaskEvent)
	msg.TaskEvent = &ev
	_, err = m.update(e, nil, msg)
	return err
}

// Taint marks a chat tainted, saying why (once: a tainted chat stays as it
// is).
func (m *Manager) Taint(id, why string) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	m.taint(e, why)
	return nil
}

// Tell adds text to chat id as a notice its model reads too, as the
// person's words, outside any turn: the transcript keeps it for a later
// turn.
func (m *Manager) Tell(id, text string) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	msg := m.notice(text)
	msg.ForModel = true
	_, err = m.update(e, nil, msg)
	return err
}

// Wake gives a chat's assistant one turn to read what came back (a
// finished task's result is already in the chat). If a turn runs, the wake
// turn follows it.
func (m *Manager) Wake(id string) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.life.Open() {
		return errors.New("chats are not running (Conch is starting or closing)")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		e.wake = true
		return nil
	}
	return m.startTurnLocked(e)
}
