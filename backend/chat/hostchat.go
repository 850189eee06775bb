package chat

import (
	"errors"
	"fmt"
	"strings"

	"conch/backend/conversation"
	"conch/backend/task"
)

// HostChats carry the person's chats that work on a host (SPEC §6) to
// their twins there, the host's runner's chats of the same id
// (*hostlink.Links). The twin runs every turn; what it says, asks and
// spends comes back here through Mirror, seq for seq.
type HostChats interface {
	// Send gives c's twin the person's text, making the twin first if it
	// is not there yet, and follows the turn it starts until it ends. It
	// returns the message as the twin took it.
	Send(c conversation.Conversation, text string) (conversation.Message, error)
	// StopTurn stops the twin's turn.
	StopTurn(c conversation.Conversation) error
	// Answer answers the twin's question askID.
	Answer(c conversation.Conversation, askID string, allow bool) error
	// Patch gives the twin c's mode and limit, and clears its taint when
	// c's is cleared.
	Patch(c conversation.Conversation) error
	// Follow follows c's twin again: a Conch that stopped while it
	// replied or asked left the turn going on there.
	Follow(c conversation.Conversation)
}

// UseHosts makes the chats on hosts reach their twins through h; call it
// before Start.
func (m *Manager) UseHosts(h HostChats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hosts = h
}

// hostChats is h, or an error saying hosts are not reached here.
func (m *Manager) hostChats(c conversation.Conversation) (HostChats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hosts == nil {
		return nil, fmt.Errorf("%w: this Conch does not reach %s, where this chat works", ErrInvalid, c.Host)
	}
	if !m.life.Open() {
		return nil, errors.New("chats are not running (Conch is starting or closing)")
	}
	return m.hosts, nil
}

// onHost reports whether c is the person's chat on a host (a task's chat
// on one is its task's to run).
func onHost(c conversation.Conversation) bool { return c.Host != "" && !c.Origin.IsRun() }

// sendThere carries the person's text to the chat's twin.
func (m *Manager) sendThere(c conversation.Conversation, text string) (conversation.Message, error) {
	h, err := m.hostChats(c)
	if err != nil {
		return conversation.Message{}, err
	}
	if c.Running {
		return conversation.Message{}, fmt.Errorf("conversation %s is still replying on %s; stop it or wait: %w", c.ID, c.Host, ErrConflict)
	}
	if c.Title == "" {
		if _, err := m.Patch(c.ID, PatchRequest{Title: ptr(task.TitleFrom(text))}); err != nil {
			return conversation.Message{}, err
		}
		c.Title = task.TitleFrom(text)
	}
	return h.Send(c, text)
}

func ptr[T any](v T) *T { return &v }

// stopThere stops the twin's turn.
func (m *Manager) stopThere(c conversation.Conversation) (conversation.Conversation, error) {
	h, err := m.hostChats(c)
	if err != nil {
		return c, err
	}
	if !c.Running {
		return c, fmt.Errorf("conversation %s is not replying: %w", c.ID, ErrConflict)
	}
	if err := h.StopTurn(c); err != nil {
		return c, err
	}
	return m.Snapshot(c.ID)
}

// answerThere answers the twin's question.
func (m *Manager) answerThere(c conversation.Conversation, askID string, allow bool) (conversation.Conversation, error) {
	h, err := m.hostChats(c)
	if err != nil {
		return c, err
	}
	if c.Ask == nil || c.Ask.ID != askID {
		return c, fmt.Errorf("that question is no longer waiting for an answer (it was answered, withdrawn or timed out): %w", ErrConflict)
	}
	if err := h.Answer(c, askID, allow); err != nil {
		return c, err
	}
	return m.Snapshot(c.ID)
}

// checkHostPatch refuses what a chat on a host cannot change: its
// provider and model are the host's CLI it was made with.
func checkHostPatch(c conversation.Conversation, req PatchRequest) error {
	if c.Host == "" {
		return nil
	}
	if req.Provider != nil && *req.Provider != c.Provider || req.Model != nil && strings.TrimSpace(*req.Model) != c.Model {
		return fmt.Errorf("%w: this chat works on %s on %s; start a new chat to use another", ErrInvalid, c.Provider, c.Host)
	}
	return nil
}
