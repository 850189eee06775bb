package taskrun

import (
	"errors"
	"fmt"

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
	return r.entries.Acquire(id, r.load)
}

// load reads a task the cache does not hold from the store.
func (r *Runner) load(id string) (*entry, error) {
	t, err := r.cfg.Store.Task(id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("task %q: %w", id, ErrNotFound)
		}
		return nil, err
	}
	return &entry{t: t}, nil
}

// finished says whether e may leave the cache when nobody holds it: a run
// holds its entry (see nextLocked), and a task that is not finished stays
// for the queue, so nothing that is working is ever dropped.
func finished(e *entry) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.t.Status.Finished() || e.deleted
}
