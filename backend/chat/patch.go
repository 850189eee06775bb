package chat

import (
	"conch/backend/conversation"
	"conch/backend/task"
	"context"
	"fmt"
	"strings"
	"time"
)

// PatchRequest changes a conversation; only the fields sent change.
type PatchRequest struct {
	Title    *string  `json:"title,omitempty"`
	Mode     *string  `json:"mode,omitempty"`
	Provider *string  `json:"provider,omitempty"`
	Model    *string  `json:"model,omitempty"`
	Limit    *float64 `json:"limit,omitempty"`
	// Tainted may only be set false: the person clears the guard's mark.
	Tainted *bool `json:"tainted,omitempty"`
}

// Patch changes a conversation. A mode change applies from the next tool
// call, a provider or model change from the next provider call.
func (m *Manager) Patch(id string, req PatchRequest) (conversation.Conversation, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return conversation.Conversation{}, err
	}
	defer release()
	if req.Mode != nil && !task.Mode(*req.Mode).Valid() {
		return conversation.Conversation{}, fmt.Errorf("%w: unknown mode %q (plan, ask, edits or auto)", ErrInvalid, *req.Mode)
	}
	if req.Provider != nil {
		if err := m.checkProvider(*req.Provider); err != nil {
			return conversation.Conversation{}, err
		}
	}
	if req.Title != nil && len(strings.TrimSpace(*req.Title)) > maxTitle {
		return conversation.Conversation{}, fmt.Errorf("%w: title is longer than %d bytes", ErrInvalid, maxTitle)
	}
	if req.Limit != nil {
		if err := checkLimit(*req.Limit); err != nil {
			return conversation.Conversation{}, err
		}
	}
	if req.Tainted != nil && *req.Tainted {
		return conversation.Conversation{}, fmt.Errorf("%w: only the guard marks a chat tainted; send tainted: false to clear it", ErrInvalid)
	}
	if err := m.checkTaskPowers(id, req); err != nil {
		return conversation.Conversation{}, err
	}
	if c := m.snapshot(e); c.Host != "" {
		return m.patchThere(e, c, req)
	}
	e.mu.Lock()
	var msgs []conversation.Message
	if req.Tainted != nil && e.c.Tainted {
		msgs = append(msgs, m.notice("You cleared the taint: side effects follow the chat's mode again."))
	}
	if req.Mode != nil && task.Mode(*req.Mode) != e.c.Mode {
		msgs = append(msgs, m.notice("Mode: "+*req.Mode+"."))
	}
	c, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		if req.Title != nil {
			c.Title = strings.TrimSpace(*req.Title)
		}
		if req.Mode != nil {
			c.Mode = task.Mode(*req.Mode)
		}
		if req.Provider != nil {
			c.Provider = *req.Provider
		}
		if req.Model != nil {
			c.Model = strings.TrimSpace(*req.Model)
		}
		if req.Limit != nil {
			c.Limit = *req.Limit
		}
		if req.Tainted != nil {
			c.Tainted = false
		}
		return nil
	}, msgs...)
	e.mu.Unlock()
	if err == nil && req.Mode != nil {
		m.narrowTasks(c)
	}
	return c, err
}

// checkTaskPowers refuses a change that would give a task's chat more
// power than the chat it came from: a wider mode, a cleared taint the
// parent still has, or a provider that cannot ask before it acts.
func (m *Manager) checkTaskPowers(id string, req PatchRequest) error {
	c, err := m.Snapshot(id)
	if err != nil || c.Origin.Kind != conversation.FromTask || c.Origin.ParentID == "" {
		return err
	}
	parent, err := m.Snapshot(c.Origin.ParentID)
	if err != nil {
		return nil // the chat it came from is gone: nothing to be wider than
	}
	if req.Mode != nil && task.Mode(*req.Mode).Wider(parent.Mode) {
		return fmt.Errorf("a task's chat cannot be in %s mode when the chat it came from is in %s mode; change that chat's mode first: %w", *req.Mode, parent.Mode, ErrConflict)
	}
	if req.Tainted != nil && parent.Tainted && c.Tainted {
		return fmt.Errorf("the chat this task came from is tainted too; clear the taint there first: %w", ErrConflict)
	}
	if req.Provider != nil && *req.Provider != c.Provider {
		p, ok := m.cfg.Providers.Provider(*req.Provider)
		if !ok {
			return m.checkProvider(*req.Provider)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info := p.Info(ctx)
		cancel()
		if !info.CanAsk {
			return fmt.Errorf("%s cannot ask before it acts, so a task's chat cannot use it: %w", name(info, *req.Provider), ErrConflict)
		}
	}
	return nil
}

// narrowTasks brings the chats of parent's tasks down to parent's mode
// when it was narrowed: a task never works in a wider mode than the chat
// it came from.
func (m *Manager) narrowTasks(parent conversation.Conversation) {
	if parent.Origin.IsRun() {
		return
	}
	kids, err := m.cfg.Store.TaskChatsOf(parent.ID)
	if err != nil {
		m.cfg.Log.Error("narrow the modes of a chat's tasks", "conversation", parent.ID, "err", err)
		return
	}
	for _, kid := range kids {
		if !kid.Mode.Wider(parent.Mode) {
			continue // as stored now: the entry may only be narrower still
		}
		e, release, err := m.acquire(kid.ID)
		if err != nil {
			continue
		}
		e.mu.Lock()
		if e.c.Mode.Wider(parent.Mode) {
			_, _ = m.updateLocked(e, func(c *conversation.Conversation) error {
				c.Mode = parent.Mode
				return nil
			}, m.notice(fmt.Sprintf("Mode: %s, as the chat this came from.", parent.Mode)))
		}
		e.mu.Unlock()
		release()
	}
}

// patchThere changes a chat on a host: its title here; its mode, limit
// and a cleared taint there too, whose notices come back with its
// messages (none is added here, where every message is the twin's).
func (m *Manager) patchThere(e *entry, c conversation.Conversation, req PatchRequest) (conversation.Conversation, error) {
	if err := checkHostPatch(c, req); err != nil {
		return c, err
	}
	if req.Tainted != nil && !onHost(c) {
		return c, fmt.Errorf("%w: a task's chat on %s keeps its taint; clear it on the chat it came from", ErrInvalid, c.Host)
	}
	next := c
	if req.Tainted != nil {
		next.Tainted = false
	}
	if req.Mode != nil {
		next.Mode = task.Mode(*req.Mode)
	}
	if req.Limit != nil {
		next.Limit = *req.Limit
	}
	if onHost(c) && (next.Mode != c.Mode || next.Limit != c.Limit || next.Tainted != c.Tainted) {
		h, err := m.hostChats(c)
		if err != nil {
			return c, err
		}
		if err := h.Patch(next); err != nil {
			return c, err
		}
	}
	return m.update(e, func(c *conversation.Conversation) error {
		if req.Title != nil {
			c.Title = strings.TrimSpace(*req.Title)
		}
		c.Mode, c.Limit, c.Tainted = next.Mode, next.Limit, next.Tainted
		return nil
	})
}
