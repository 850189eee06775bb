package taskrun

import (
	"fmt"

	"conch/backend/event"
	"conch/backend/task"
)

// update applies fn to a copy of the task, stores it, keeps it and publishes
// it, in that order. If fn or the store fails, nothing changes.
func (r *Runner) update(id string, fn func(t *task.Task) error) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	return r.updateEntry(e, fn)
}

// updateEntry is update for a caller that holds the entry already (and may
// hold r.mu: the lock order is r.mu, then entry.mu).
func (r *Runner) updateEntry(e *entry, fn func(t *task.Task) error) (task.Task, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.updateLocked(e, fn)
}

func (r *Runner) updateLocked(e *entry, fn func(t *task.Task) error) (task.Task, error) {
	ts, errs := r.updateAllLocked(change{e, fn})
	return ts[0], errs[0]
}

// change is one task's part of a write (updateAllLocked).
type change struct {
	e  *entry
	fn func(t *task.Task) error
}

// updateAllLocked is update for several tasks at once, each entry's lock
// held by the caller: the changes fn accepts are stored in one write, then
// kept and published in order. A change fn refuses (or of a deleted task)
// is left out; the others still land. It answers each task as it is now
// and each change's error.
func (r *Runner) updateAllLocked(cs ...change) ([]task.Task, []error) {
	return r.commitLocked(r.prepareLocked(cs...))
}

// write is a write made ready: each change's next record (nil where it
// was refused) and why it was refused.
type write struct {
	cs   []change
	next []*task.Task
	errs []error
}

// prepareLocked applies each change to a copy of its task (updateAllLocked
// without the write).
func (r *Runner) prepareLocked(cs ...change) *write {
	w := &write{cs: cs, next: make([]*task.Task, len(cs)), errs: make([]error, len(cs))}
	for i, c := range cs {
		if c.e.deleted {
			w.errs[i] = fmt.Errorf("task %q: %w", c.e.t.ID, ErrNotFound)
			continue
		}
		n := c.e.t.Clone()
		if err := c.fn(&n); err != nil {
			w.errs[i] = err
			continue
		}
		n.Rev = c.e.t.Rev + 1
		w.next[i] = &n
	}
	return w
}

// commitLocked stores what w made ready in one write, then keeps and
// publishes it in order (the rest of updateAllLocked).
func (r *Runner) commitLocked(w *write) ([]task.Task, []error) {
	var next []task.Task
	for _, n := range w.next {
		if n != nil {
			next = append(next, *n)
		}
	}
	var err error
	switch len(next) {
	case 0:
	case 1:
		if err = r.cfg.Store.PutTask(next[0]); err != nil {
			err = fmt.Errorf("save task %s: %w", next[0].ID, err)
		}
	default:
		err = r.cfg.Store.PutTasks(next)
	}
	out, errs := make([]task.Task, len(w.cs)), w.errs
	for i, c := range w.cs {
		if errs[i] == nil && err != nil {
			errs[i] = err
		}
		if errs[i] != nil {
			out[i] = c.e.t.Clone()
			continue
		}
		prev := c.e.t.Status
		c.e.t = *w.next[i]
		r.publish(prev, c.e.t)
		out[i] = c.e.t.Clone()
	}
	return out, errs
}

// publish tells Observe and the bus of t, which was prev ("" for a new
// task).
func (r *Runner) publish(prev task.Status, t task.Task) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(prev, t.Clone())
	}
	c := t.Clone()
	r.cfg.Bus.Publish(event.Event{Type: event.TaskChanged, Task: &c, Prev: prev})
}
