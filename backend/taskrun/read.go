package taskrun

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"conch/backend/ask"
	"conch/backend/store"
	"conch/backend/task"
)

// Get returns one task: the live record, else the stored one (which is
// never behind it: every change is stored first).
func (r *Runner) Get(id string) (task.Task, error) {
	r.mu.Lock()
	e, ok := r.entries.Get(id)
	r.mu.Unlock()
	if ok {
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.deleted {
			return e.t.Clone(), nil
		}
		return task.Task{}, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	t, err := r.cfg.Store.Task(id)
	if errors.Is(err, store.ErrNotFound) {
		return task.Task{}, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	return t, err
}

// Slots reports how many tasks of a kind hold a slot, and the limit.
type Slots struct {
	Running int `json:"running"`
	Limit   int `json:"limit"`
}

// Concurrent is the slot use of both kinds.
type Concurrent struct {
	Background Slots `json:"background"`
	Helper     Slots `json:"helper"`
}

// Active returns every task that is not finished, oldest first, and the
// slot use.
func (r *Runner) Active() ([]task.Task, Concurrent) {
	r.mu.Lock()
	entries := make([]*entry, 0, r.entries.Len())
	for _, e := range r.entries.All() {
		entries = append(entries, e)
	}
	c := r.concurrentLocked()
	r.mu.Unlock()
	out := make([]task.Task, 0, len(entries))
	for _, e := range entries {
		e.mu.Lock()
		if !e.deleted && !e.t.Status.Finished() {
			out = append(out, e.t.Clone())
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, c
}

// Concurrent is the slot use now.
func (r *Runner) Concurrent() Concurrent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.concurrentLocked()
}

func (r *Runner) concurrentLocked() Concurrent {
	return Concurrent{
		Background: Slots{Running: r.active[pool{kind: task.Background}], Limit: r.limits.Background},
		Helper:     Slots{Running: r.active[pool{kind: task.Helper}], Limit: r.limits.Helper},
	}
}

// Page is a page of one status group's tasks in the tasks page's order
// (see store.TasksInGroup). The store is never behind the live records:
// every change is stored before it is kept.
func (r *Runner) Page(g store.Group, f store.TaskFilter, cursor string, limit int) (store.Page, error) {
	return pageOf(r.cfg.Store.TasksInGroup(g, f, cursor, limit))
}

// TasksOf is a page of the tasks sent from chat parent, newest first.
func (r *Runner) TasksOf(parent, cursor string, limit int) (store.Page, error) {
	return pageOf(r.cfg.Store.TasksOf(parent, cursor, limit))
}

// pageOf turns the store's refusal of a cursor into the runner's.
func pageOf(p store.Page, err error) (store.Page, error) {
	if errors.Is(err, store.ErrBadCursor) {
		return p, fmt.Errorf("%w: the cursor is not one this list gave out", ErrInvalid)
	}
	return p, err
}

// UnsettledWorktrees are the helpers whose worktree is not settled yet.
func (r *Runner) UnsettledWorktrees() ([]task.Task, error) { return r.cfg.Store.UnsettledWorktrees() }

// OwedWakes are the finished tasks whose chat still waits for a turn on
// their result.
func (r *Runner) OwedWakes() ([]task.Task, error) { return r.cfg.Store.OwedWakes() }

// FinishedBefore are up to limit finished tasks that ended before cutoff,
// the longest ago first.
func (r *Runner) FinishedBefore(cutoff time.Time, limit int) ([]task.Task, error) {
	return r.cfg.Store.FinishedBefore(cutoff, limit)
}

// Counts is how many tasks there are in each status.
func (r *Runner) Counts() (map[task.Status]int, error) { return r.cfg.Store.TaskCounts() }

// Approval is one pending question, as the approval inbox lists it.
type Approval struct {
	TaskID string `json:"taskId"`
	// ConversationID is the task's own chat ("" for a shell command).
	ConversationID string       `json:"conversationId"`
	Title          string       `json:"title"`
	Cwd            string       `json:"cwd"`
	Ask            ask.Question `json:"ask"`
}

// Approvals lists every pending question, oldest first.
func (r *Runner) Approvals() []Approval {
	tasks, _ := r.Active()
	out := []Approval{}
	for _, t := range tasks {
		if t.Status == task.NeedsYou && t.Ask != nil {
			out = append(out, Approval{TaskID: t.ID, ConversationID: t.ConversationID, Title: t.Title, Cwd: t.Cwd, Ask: *t.Ask})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ask.AskedAt.Before(out[j].Ask.AskedAt) })
	return out
}
