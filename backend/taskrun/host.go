package taskrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"conch/backend/pref"
	"conch/backend/store"
	"conch/backend/task"
)

// Hosts runs the tasks that have a host: another computer, reached over
// SSH, whose own Conch runner does the work (SPEC §6).
type Hosts interface {
	Executor
	// Check says why tasks cannot be sent to host (nil: they can), in a
	// sentence naming the hosts that can take work.
	Check(host string) error
	// Limits are how many tasks may run on host at once.
	Limits(host string) pref.Limits
	// Forget deletes there a task deleted here, without waiting: a host
	// out of reach keeps it.
	Forget(host, id string)
}

// reattach starts following a task that a Conch that stopped left working
// on its host: it is running there still (or asking), so its run takes a
// slot of the host's at once, and carries on rather than starting it.
func (r *Runner) reattach(t task.Task) error {
	if r.cfg.Hosts == nil {
		return errNoHosts
	}
	// A question asked before the stop is asked again by the run, if the
	// host still waits on it.
	t, err := r.update(t.ID, func(t *task.Task) error {
		t.Ask = nil
		if t.Status == task.NeedsYou {
			return t.SetStatus(task.Running, r.cfg.Now())
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries.Get(t.ID)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithCancelCause(r.life.Context())
	p := poolOf(t)
	h := &activeRun{cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1), pool: p, slot: true}
	e.mu.Lock()
	e.run = h
	e.mu.Unlock()
	e.Hold()
	r.active[p]++
	r.life.WG.Add(1)
	go r.run(ctx, e, h, &start{t: t, reattach: true})
	return nil
}

// onHost checks a new task for a host: one tasks can be sent to, and
// work a host's runner does (a shell command, so far).
func (r *Runner) onHost(o Options) error {
	if r.cfg.Hosts == nil {
		return errNoHosts
	}
	if err := r.cfg.Hosts.Check(o.Host); err != nil {
		return err
	}
	if o.Provider != "shell" {
		return fmt.Errorf("%w: only shell commands run on another computer so far, not %s", ErrInvalid, o.Provider)
	}
	return nil
}

// validID is an id as Conch gives them (a uuid, in its text form).
func validID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// insertNew inserts t, whose id its request gave, unless a task has that
// id already (ErrConflict).
func (r *Runner) insertNew(t task.Task) (task.Task, error) {
	r.idMu.Lock()
	defer r.idMu.Unlock()
	if _, err := r.cfg.Store.Task(t.ID); !errors.Is(err, store.ErrNotFound) {
		if err == nil {
			err = fmt.Errorf("%w: a task with id %s exists already", ErrConflict, t.ID)
		}
		return task.Task{}, err
	}
	return r.insert(t)
}
