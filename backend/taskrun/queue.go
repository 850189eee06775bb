package taskrun

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"conch/backend/pref"
	"conch/backend/task"
)

// Create validates req, writes the task as queued and schedules it.
func (r *Runner) Create(req CreateRequest) (task.Task, error) {
	t, err := r.newTask(req)
	if err != nil {
		return task.Task{}, err
	}
	if ex, ok := r.cfg.Executors[t.Provider]; ok && t.Host == "" {
		if ready, reason := ex.Ready(); !ready {
			t.Status = task.Failed
			t.Error = reason
			now := r.cfg.Now()
			t.EndedAt = &now
		}
	}
	if req.Options.ID != "" {
		return r.insertNew(t)
	}
	return r.insert(t)
}

// Insert schedules a task prepared elsewhere (a chat's background task, a
// delegate part): its id, kind, chat, provider, mode and folder are set by
// the caller and checked here. A task given as failed (its provider was
// not ready) is stored as it is and never runs.
func (r *Runner) Insert(t task.Task) (task.Task, error) {
	if t.Status != task.Failed {
		t.Status = task.Queued
	}
	if t.Steps == nil {
		t.Steps = []string{}
	}
	if t.Wake == "" {
		t.Wake = task.WakeNone
	}
	if strings.TrimSpace(t.Title) == "" {
		t.Title = task.TitleFrom(t.Text)
	}
	if err := Validate(t); err != nil {
		return task.Task{}, err
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = r.cfg.Now().UTC()
	}
	if t.Status == task.Failed && t.EndedAt == nil {
		now := r.cfg.Now()
		t.EndedAt = &now
	}
	return r.insert(t)
}

func (r *Runner) insert(t task.Task) (task.Task, error) {
	t.Rev = 1
	if err := r.cfg.Store.PutTask(t); err != nil {
		return task.Task{}, fmt.Errorf("create task: %w", err)
	}
	e := &entry{t: t}
	r.mu.Lock()
	if r.life.Closed() {
		r.mu.Unlock()
		return task.Task{}, errors.New("create task: Conch is shutting down")
	}
	r.entries.Put(t.ID, e)
	if t.Status == task.Queued {
		r.queue[poolOf(t)] = append(r.queue[poolOf(t)], t.ID)
	}
	// Publish under r.mu so the queued copy goes out before dispatch can
	// announce the running one.
	r.publish("", t)
	r.mu.Unlock()
	r.dispatch()
	return t.Clone(), nil
}

// SetLimits changes how many tasks of each kind run at once.
func (r *Runner) SetLimits(l pref.Limits) {
	r.mu.Lock()
	r.limits = l
	r.mu.Unlock()
	r.dispatch()
}

// pool is what a task's slot is counted against: its kind, on this
// computer or on one host. Each pool has its own limit and queue, so work
// on a host never waits behind work here, nor the other way round.
type pool struct {
	host string
	kind task.Kind
}

func poolOf(t task.Task) pool { return pool{host: t.Host, kind: t.Kind} }

// dispatch starts queued tasks while their pool has free slots.
func (r *Runner) dispatch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.life.Open() {
		return
	}
	for p := range r.queue {
		for r.active[p] < r.limitOf(p) {
			n := r.nextLocked(p)
			if n == nil {
				break
			}
			r.active[p]++
			go r.run(n.ctx, n.e, n.h, nil)
		}
		if len(r.queue[p]) == 0 {
			delete(r.queue, p)
		}
	}
}

// limitOf is how many tasks of p may work at once: the preferences' here,
// the host's own there.
func (r *Runner) limitOf(p pool) int {
	l := r.limits
	if p.host != "" {
		l = r.cfg.Hosts.Limits(p.host)
	}
	if p.kind == task.Helper {
		return l.Helper
	}
	return l.Background
}

// queuedRun is a queued task taken for a slot, with its run.
type queuedRun struct {
	e   *entry
	h   *activeRun
	ctx context.Context
}

// nextLocked takes the first queued task of p that can still start
// and gives it a run holding a slot (r.mu held; the caller counts the slot
// and starts the run). Nil: none is waiting.
func (r *Runner) nextLocked(p pool) *queuedRun {
	for len(r.queue[p]) > 0 {
		id := r.queue[p][0]
		r.queue[p] = r.queue[p][1:]
		e, ok := r.entries.Get(id)
		if !ok {
			continue
		}
		ctx, cancel := context.WithCancelCause(r.life.Context())
		h := &activeRun{cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1), pool: p, slot: true}
		e.mu.Lock()
		if e.deleted || e.t.Status != task.Queued {
			e.mu.Unlock()
			cancel(nil)
			continue
		}
		e.run = h
		e.mu.Unlock()
		e.Hold() // the run holds it until its end (see endRun)
		r.life.WG.Add(1)
		return &queuedRun{e: e, h: h, ctx: ctx}
	}
	return nil
}

// passSlot ends h's hold on its slot as its work ends. When a task of its
// kind is waiting, the slot goes straight to it, so that task's start can
// be stored with h's end in one write (see finish); otherwise h keeps it
// until its end is stored (endRun frees it), so no task's start is ever
// stored while more than the limit are still working.
func (r *Runner) passSlot(h *activeRun) *queuedRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.slot && r.life.Open() && r.active[h.pool] <= r.limitOf(h.pool) {
		if n := r.nextLocked(h.pool); n != nil {
			h.slot = false // the count stays: the slot is n's now
			return n
		}
	}
	return nil
}

// releaseSlot frees h's slot for the queue while its task waits on the
// person.
func (r *Runner) releaseSlot(h *activeRun) {
	r.mu.Lock()
	if h.slot {
		r.active[h.pool]--
		h.slot = false
	}
	r.mu.Unlock()
	r.dispatch()
}

// takeSlot counts h against its kind's limit again.
func (r *Runner) takeSlot(h *activeRun) {
	r.mu.Lock()
	if !h.slot {
		r.active[h.pool]++
		h.slot = true
	}
	r.mu.Unlock()
}

func (r *Runner) dequeueLocked(id string) bool {
	for p, q := range r.queue {
		for i, qid := range q {
			if qid == id {
				r.queue[p] = append(q[:i:i], q[i+1:]...)
				return true
			}
		}
	}
	return false
}
