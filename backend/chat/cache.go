package chat

import (
	"conch/backend/internal/lru"
	"conch/backend/store"
	"errors"
	"fmt"
)

// acquire returns the conversation's entry, read from the store into the
// cache if it is not there, and holds it until release is called. The read
// is made under m.mu, so no second entry can be made meanwhile.
func (m *Manager) acquire(id string) (*entry, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[id]
	if !ok {
		c, err := m.cfg.Store.Conversation(id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, fmt.Errorf("conversation %q: %w", id, ErrNotFound)
		}
		if err != nil {
			return nil, nil, err
		}
		e = &entry{c: c}
		m.entries[id] = e
	}
	e.refs.Add(1)
	m.tick++
	e.used = m.tick
	return e, func() { m.release(e) }, nil
}

// hold holds e once more, for one who holds it already.
func (e *entry) hold() { e.refs.Add(1) }

// release lets go of an entry acquire (or hold) gave, and trims the cache.
func (m *Manager) release(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.refs.Add(-1) < 0 {
		panic("chat: an entry was released more often than it was held")
	}
	m.trimLocked()
}

// trimLocked drops the least recently used entries nobody holds, down to
// cacheSize of them, once there are twice that many. A turn holds its
// entry, so nothing replying or asking is ever dropped.
func (m *Manager) trimLocked() {
	if len(m.entries) <= 2*cacheSize {
		return
	}
	lru.Trim(m.entries, cacheSize, func(e *entry) (bool, int64) { return e.refs.Load() == 0, e.used })
}
