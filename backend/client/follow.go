package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"conch/backend/task"
)

// Mark is what a client holds of one task: the highest rev it has seen,
// and how many bytes of the task's output it has.
type Mark struct {
	Rev    int64 `json:"rev"`
	Offset int64 `json:"offset"`
}

// Change is one thing a follower did not have yet: a task at a newer rev
// (Task), a task the runner no longer has (Deleted), or the task ID's
// output from byte From on (Output).
type Change struct {
	Task    *task.Task
	Deleted string
	ID      string
	From    int64
	Output  []byte
}

// Follower keeps one client's marks of the tasks of the Conch it follows
// (a host's runner) and brings them up to date: after a break by rev and
// output offset, then live from the event stream. Every change it hands
// on is newer than the marks, and every byte of output comes once, in
// order: nothing twice, nothing lost. Its methods are safe to call from
// one goroutine at a time; Marks from any.
type Follower struct {
	c *Client

	// only keeps to the marked tasks: the others are neither listed nor
	// handed on.
	only bool
	// states hands on states only: the output is the caller's to stream
	// (StreamOutput).
	states bool

	mu    sync.Mutex
	marks map[string]Mark
}

// Only makes f follow only the tasks it holds marks of (one task's run
// following its own task on a host), and returns f.
func (f *Follower) Only() *Follower {
	f.only = true
	return f
}

// States makes f hand on the tasks' states only, never their output, and
// returns f: a caller that streams the output as it is written
// (StreamOutput) gets it sooner than a task's next state says there is
// more.
func (f *Follower) States() *Follower {
	f.states = true
	return f
}

// NewFollower follows c from marks (nil: from nothing); the map is
// copied.
func NewFollower(c *Client, marks map[string]Mark) *Follower {
	m := make(map[string]Mark, len(marks))
	for id, mk := range marks {
		m[id] = mk
	}
	return &Follower{c: c, marks: m}
}

// Marks is what the follower holds now, to keep for the next one.
func (f *Follower) Marks() map[string]Mark {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]Mark, len(f.marks))
	for id, mk := range f.marks {
		m[id] = mk
	}
	return m
}

// Follow opens the event stream, catches up (every task in the list,
// and each one marked that the list no longer shows), then hands on each
// change as it comes, until ctx ends or the stream does (Conch went away,
// or dropped this client for falling behind): then it returns why, and a
// new Follow carries on from the marks. Opening the stream first means
// no change made during the catch-up is missed; the marks skip what the
// catch-up already gave.
func (f *Follower) Follow(ctx context.Context, fn func(Change)) error {
	s, err := f.c.Events(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := f.CatchUp(ctx, fn); err != nil {
		return err
	}
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		switch ev.Type {
		case EventTaskChanged:
			if ev.Task != nil {
				if err := f.apply(ctx, *ev.Task, fn); err != nil {
					return err
				}
			}
		case EventTaskDeleted:
			f.gone(ev.ID, fn)
		case EventReload:
			if err := f.CatchUp(ctx, fn); err != nil {
				return err
			}
		}
	}
}

// CatchUp lists every task once and hands on what is newer than the
// marks: tasks at a higher rev, the output after each offset, and the
// marked tasks that are gone.
func (f *Follower) CatchUp(ctx context.Context, fn func(Change)) error {
	var tasks []task.Task
	if !f.only {
		var err error
		if tasks, err = f.c.AllTasks(ctx); err != nil {
			return err
		}
	}
	listed := map[string]bool{}
	for _, t := range tasks {
		listed[t.ID] = true
		if err := f.apply(ctx, t, fn); err != nil {
			return err
		}
	}
	for id := range f.Marks() {
		if listed[id] {
			continue
		}
		// A task may have moved between the list's pages as it was read:
		// ask for it before calling it gone.
		var t task.Task
		err := f.c.Do(ctx, http.MethodGet, "/api/tasks/"+url.PathEscape(id), nil, &t)
		var apiErr *Error
		switch {
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound:
			f.gone(id, fn)
		case err != nil:
			return err
		default:
			if err := f.apply(ctx, t, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply hands t on when it is newer than its mark, then the output the
// mark has not got: after a newer rev, or when t says there is more than
// the mark holds (a client that stopped between the two).
func (f *Follower) apply(ctx context.Context, t task.Task, fn func(Change)) error {
	f.mu.Lock()
	mk, known := f.marks[t.ID]
	if f.only && !known {
		f.mu.Unlock()
		return nil
	}
	newer := !known || t.Rev > mk.Rev
	if newer {
		mk.Rev = t.Rev
		f.marks[t.ID] = mk
	}
	f.mu.Unlock()
	if newer {
		fn(Change{Task: &t})
	} else if t.OutputBytes <= mk.Offset {
		return nil
	}
	if f.states {
		return nil
	}
	return f.readOutput(ctx, t.ID, mk.Offset, fn)
}

// readOutput hands on the task's output from offset to what the log holds
// now, and moves the mark past it.
func (f *Follower) readOutput(ctx context.Context, id string, offset int64, fn func(Change)) error {
	for {
		b, next, err := f.c.Output(ctx, id, offset)
		if err != nil {
			var apiErr *Error
			if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
				return nil // deleted meanwhile: its task.deleted follows
			}
			return fmt.Errorf("catch up on task %s's output: %w", id, err)
		}
		if len(b) == 0 || next <= offset {
			return nil
		}
		fn(Change{ID: id, From: offset, Output: b})
		offset = next
		f.mu.Lock()
		if mk, ok := f.marks[id]; ok {
			mk.Offset = offset
			f.marks[id] = mk
		}
		f.mu.Unlock()
	}
}

// gone hands on a marked task's deletion once and forgets its mark.
func (f *Follower) gone(id string, fn func(Change)) {
	f.mu.Lock()
	_, known := f.marks[id]
	delete(f.marks, id)
	f.mu.Unlock()
	if known {
		fn(Change{Deleted: id})
	}
}

// taskPage is a page of GET /api/tasks, as much as AllTasks reads.
type taskPage struct {
	Tasks []task.Task `json:"tasks"`
	Next  string      `json:"next"`
}

// AllTasks lists every task: the ones not finished, then every page of
// the finished ones. A task that changed between pages may be listed
// twice; the follower keeps the higher rev.
func (c *Client) AllTasks(ctx context.Context) ([]task.Task, error) {
	var page taskPage
	if err := c.Do(ctx, http.MethodGet, "/api/tasks", nil, &page); err != nil {
		return nil, err
	}
	all := page.Tasks
	for page.Next != "" {
		cursor := page.Next
		page = taskPage{}
		if err := c.Do(ctx, http.MethodGet, "/api/tasks?group=finished&cursor="+url.QueryEscape(cursor), nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Tasks...)
	}
	return all, nil
}
