package taskrun

import (
	"errors"
	"fmt"

	"conch/backend/internal/lru"
	"conch/backend/store"
)

// cacheSize is how many finished tasks nobody holds are kept in memory.
const cacheSize = 256

// acquire returns the task's entry, read from the store into the cache if
// it is not there, and holds it until release is called. The read is made
// under r.mu, so it cannot race a Delete (which holds r.mu too).
func (r *Runner) acquire(id string) (*entry, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	if !ok {
		t, err := r.cfg.Store.Task(id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				err = fmt.Errorf("task %q: %w", id, ErrNotFound)
			}
			return nil, nil, err
		}
		e = &entry{t: t}
		r.entries[id] = e
	}
	e.refs++
	r.tick++
	e.used = r.tick
	return e, func() { r.release(e) }, nil
}

// release lets go of an entry acquire gave, and trims the cache.
func (r *Runner) release(e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unrefLocked(e)
}

// unrefLocked lets go of e (with r.mu held) and trims the cache when it
// has grown to twice its size.
func (r *Runner) unrefLocked(e *entry) {
	e.refs--
	if len(r.entries) > 2*cacheSize {
		r.trimLocked()
	}
}

// trimLocked drops the least recently used finished entries nobody holds,
// down to cacheSize of them. A run holds its entry (see dispatch), so
// nothing that is working is ever dropped.
func (r *Runner) trimLocked() {
	lru.Trim(r.entries, cacheSize, func(e *entry) (bool, int64) {
		if e.refs > 0 {
			return false, 0
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.t.Status.Finished() || e.deleted, e.used
	})
}
