package taskrun

import (
	"errors"
	"fmt"
	"time"

	"conch/backend/event"
	"conch/backend/store"
	"conch/backend/task"
)

// StopTask stops a waiting, working or asking task. A working task is sent
// SIGTERM (then SIGKILL); StopTask waits briefly for it to end.
func (r *Runner) StopTask(id string) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	if t, ok, err := r.stopQueued(id, e); ok {
		return t, err
	}
	e.mu.Lock()
	// A task just taken from the queue has its run before it is marked
	// running: stopping it then stops that run.
	h := e.run
	if h == nil || !(e.t.Status.Active() || e.t.Status == task.Queued) {
		t := e.t.Clone()
		e.mu.Unlock()
		return t, &task.TransitionError{ID: id, From: t.Status, To: task.Stopped}
	}
	h.cancel(errStopped)
	done := h.done
	e.mu.Unlock()
	select {
	case <-done:
	case <-time.After(stopGrace):
	}
	return r.Get(id)
}

// stopQueued stops id if it is still in the queue; ok says whether it was.
func (r *Runner) stopQueued(id string, e *entry) (task.Task, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.dequeueLocked(id) {
		return task.Task{}, false, nil
	}
	t, err := r.updateEntry(e, func(t *task.Task) error {
		t.AddStep("Stopped before it started")
		return t.SetStatus(task.Stopped, r.cfg.Now())
	})
	return t, true, err
}

// Retry runs a finished task again from the start (a chat task in a
// fresh conversation: its model does not see the earlier try).
func (r *Runner) Retry(id string) (task.Task, error) {
	return r.requeue(id, func(t *task.Task) error {
		if err := t.SetStatus(task.Queued, r.cfg.Now()); err != nil {
			return err
		}
		t.Note = ""
		t.Steps = []string{}
		t.Resume = nil
		return nil
	})
}

// Resume carries an interrupted, failed or stopped chat task on from where
// it stopped: its chat continues with the whole transcript and a notice of
// what happened. Its steps, output and spend carry on. A task paused at a
// limit is told to carry on now.
func (r *Runner) Resume(id string) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	e.mu.Lock()
	t := e.t.Clone()
	var wake chan struct{}
	if e.run != nil {
		wake = e.run.wake
	}
	e.mu.Unlock()
	if t.Paused != nil && t.Status.Active() && wake != nil {
		select {
		case wake <- struct{}{}:
		default: // already told
		}
		return t, nil
	}
	return r.requeue(id, func(t *task.Task) error {
		if why := t.Resumable(); why != "" {
			return fmt.Errorf("%w: %s", ErrConflict, why)
		}
		res := &task.Resume{From: t.Status, Reason: t.Error, At: r.cfg.Now().UTC()}
		if n := len(t.Steps); n > 0 {
			res.LastStep = t.Steps[n-1]
		}
		if err := t.SetStatus(task.Queued, r.cfg.Now()); err != nil {
			return err
		}
		t.Resume = res
		return nil
	})
}

// requeue moves a finished task back to the queue with fn (which sets its
// status), clearing what its last run came to.
func (r *Runner) requeue(id string, fn func(t *task.Task) error) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	r.mu.Lock()
	t, err := r.updateEntry(e, func(t *task.Task) error {
		if err := fn(t); err != nil {
			return err
		}
		t.Summary, t.Error, t.Current = "", "", ""
		t.Result, t.Ask, t.ExitCode, t.Paused = nil, nil, nil, nil
		t.Notified = false
		return nil
	})
	if err == nil {
		r.queue[poolOf(t)] = append(r.queue[poolOf(t)], id)
	}
	r.mu.Unlock()
	if err != nil {
		return t, err
	}
	r.dispatch()
	return t, nil
}

// Delete removes a task that is not working, and its output. Its chat stays.
func (r *Runner) Delete(id string) error {
	e, release, err := r.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	r.mu.Lock()
	defer r.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.deleted {
		return fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	if e.t.Status.Active() {
		return fmt.Errorf("it is %s; stop it before deleting it: %w", e.t.Status.Words(), ErrConflict)
	}
	if err := r.cfg.Store.DeleteTask(id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete task %s: %w", id, err)
	}
	// From here on nothing writes it again: a run dispatched a moment ago
	// finds it gone before it starts, and its command never runs.
	e.deleted = true
	r.dequeueLocked(id)
	r.entries.Remove(id)
	if err := r.cfg.Logs.Remove(id); err != nil {
		return fmt.Errorf("delete task %s output: %w", id, err)
	}
	r.cfg.Bus.Publish(event.Event{Type: event.TaskDeleted, ID: id, Prev: e.t.Status})
	if e.t.Host != "" && r.cfg.Hosts != nil {
		r.cfg.Hosts.Forget(e.t.Host, id)
	}
	return nil
}

// Amend changes a task's record outside its run (whether its chat was
// woken); its status never changes here.
func (r *Runner) Amend(id string, fn func(t *task.Task)) (task.Task, error) {
	return r.update(id, func(t *task.Task) error {
		status := t.Status
		fn(t)
		t.Status = status
		return nil
	})
}

// MarkNotified records that the OS notification for the task's current
// finish is being sent. It reports false when the task has not finished or
// was already marked, so a finish is announced once, across restarts: the
// mark is durable before the notification goes out.
func (r *Runner) MarkNotified(id string) (task.Task, bool, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, false, err
	}
	defer release()
	marked := false
	t, err := r.updateEntry(e, func(t *task.Task) error {
		if !t.Status.Finished() || t.Notified {
			return errNothingToDo
		}
		t.Notified = true
		marked = true
		return nil
	})
	if errors.Is(err, errNothingToDo) {
		err = nil
	}
	return t, marked, err
}

var errNothingToDo = errors.New("nothing to do")

// Answer answers the task's pending question. A second answer, or one for a
// question that is no longer asked, is refused with ErrConflict.
func (r *Runner) Answer(id, askID string, allow bool) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	e.mu.Lock()
	defer e.mu.Unlock()
	if askID == "" {
		return e.t.Clone(), fmt.Errorf("%w: askId is empty", ErrInvalid)
	}
	if e.askID == "" || e.askID != askID || e.t.Status != task.NeedsYou {
		return e.t.Clone(), fmt.Errorf("that question is no longer waiting for an answer (it was answered, withdrawn or timed out): %w", ErrConflict)
	}
	// Either way the task works on: an agent's chat carries on after a
	// denial, a shell command ends there.
	if _, err := r.updateLocked(e, func(t *task.Task) error {
		t.Ask = nil
		t.Current = ""
		if allow {
			t.AddStep("You allowed it")
		} else {
			t.AddStep("You declined it")
		}
		return t.SetStatus(task.Running, r.cfg.Now())
	}); err != nil {
		return e.t.Clone(), err
	}
	e.askID = ""
	e.answer <- allow
	return e.t.Clone(), nil
}
