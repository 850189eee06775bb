package taskrun

import (
	"errors"

	"conch/backend/task"
)

// Observe makes fn see every stored change of a task, in order, as
// Config.Observe does (with the task's lock held: fn must not block or
// call back). It is for a part made after the runner that follows its
// tasks; it is refused once the runner has started, when a change could
// already have gone by unseen, and when another observes already.
func (r *Runner) Observe(fn func(prev task.Status, t task.Task)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.life.Open() || r.life.Closed():
		return errors.New("observe tasks: the runner has started already")
	case r.cfg.Observe != nil:
		return errors.New("observe tasks: something observes them already")
	}
	r.cfg.Observe = fn
	return nil
}
