package chat

import (
	"errors"
	"fmt"

	"conch/backend/store"
)

// acquire returns the conversation's entry, read from the store into the
// cache if it is not there, and holds it until release is called. The read
// is made under m.mu, so no second entry can be made meanwhile.
func (m *Manager) acquire(id string) (*entry, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries.Acquire(id, func(id string) (*entry, error) {
		c, err := m.cfg.Store.Conversation(id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("conversation %q: %w", id, ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		return &entry{c: c}, nil
	})
}

// release lets go of an entry acquire (or Hold) gave, and trims the cache.
func (m *Manager) release(e *entry) { m.entries.Release(e) }
