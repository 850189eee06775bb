// Package follow brings what happens to a task back to the chat it came
// from: every status change as a task event (the chat folds them into one
// card), a background task's result, the taint a helper picked up, and one
// wake of the chat's assistant when it asked for the work. It also tells
// whoever waits for a task (delegate) that it finished.
//
// It follows the runner's Observe hook, which sees every stored change in
// order: a queue keeps them, so the hook never waits on a chat.
package follow

import (
	"fmt"
	"sync"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// Follower follows tasks back to their chats. New it, give the runner its
// Observe, then Start it with the runner; Stop is safe twice and before
// Start.
type Follower struct {
	chats *chat.Manager
	tasks *taskrun.Runner

	mu      sync.Mutex // guards the fields below
	queue   []change
	waiters map[string][]chan task.Task
	started bool

	signal chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

// New returns a follower that posts to chats.
func New(chats *chat.Manager) *Follower {
	return &Follower{
		chats: chats, waiters: map[string][]chan task.Task{},
		signal: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// Start follows the runner's tasks; it delivers the wakes that a Conch that
// stopped still owed. Changes the runner made while healing (running →
// interrupted) are already queued and are told as any other.
func (f *Follower) Start(tasks *taskrun.Runner) {
	// Read before taking f.mu: the runner calls Observe (which takes f.mu)
	// with a task's lock held.
	all, _ := tasks.OwedWakes()
	f.mu.Lock()
	if f.started {
		f.mu.Unlock()
		return
	}
	f.started = true
	f.tasks = tasks
	queued := map[string]bool{}
	for _, c := range f.queue {
		queued[c.t.ID] = true
	}
	var owed []task.Task
	for _, t := range all {
		if !queued[t.ID] {
			owed = append(owed, t)
		}
	}
	f.mu.Unlock()
	for _, t := range owed {
		f.wake(t)
	}
	go f.loop()
	f.poke()
}

// Stop ends the follower.
func (f *Follower) Stop() {
	f.mu.Lock()
	started := f.started
	f.started = false
	f.mu.Unlock()
	if !started {
		return
	}
	close(f.stop)
	<-f.done
}

// change is one stored change of a task: what it was, and is.
type change struct {
	prev task.Status
	t    task.Task
}

// Observe is the runner's hook: it queues the change and returns at once.
func (f *Follower) Observe(prev task.Status, t task.Task) {
	if t.ConversationID == "" || t.ParentConversationID == "" {
		return
	}
	f.mu.Lock()
	f.queue = append(f.queue, change{prev, t})
	f.mu.Unlock()
	f.poke()
}

func (f *Follower) poke() {
	select {
	case f.signal <- struct{}{}:
	default:
	}
}

func (f *Follower) loop() {
	defer close(f.done)
	for {
		select {
		case <-f.stop:
			return
		case <-f.signal:
		}
		for {
			f.mu.Lock()
			q := f.queue
			f.queue = nil
			f.mu.Unlock()
			if len(q) == 0 {
				break
			}
			for _, c := range q {
				f.follow(c.prev, c.t)
			}
		}
	}
}

// WaitFor returns a channel that receives the task once it finishes.
// Register before the task can finish (before the runner has it).
func (f *Follower) WaitFor(id string) <-chan task.Task {
	ch := make(chan task.Task, 1)
	f.mu.Lock()
	f.waiters[id] = append(f.waiters[id], ch)
	f.mu.Unlock()
	return ch
}

// Forget drops the waiters of a task that never started.
func (f *Follower) Forget(id string) {
	f.mu.Lock()
	delete(f.waiters, id)
	f.mu.Unlock()
}

// follow tells the parent chat of a status change and, on a finish, brings
// the result and the taint back and releases whoever waits for it.
func (f *Follower) follow(prev task.Status, t task.Task) {
	if prev == t.Status {
		return
	}
	ev := Update(t)
	_ = f.chats.PostTaskEvent(t.ParentConversationID, ev)
	if !t.Status.Finished() {
		return
	}
	f.flowTaint(t)
	if t.Kind == task.Background {
		final := ev
		final.Final = true
		final.Summary = t.Summary
		_ = f.chats.PostTaskEvent(t.ParentConversationID, final)
		if t.Wake == task.WakePending {
			f.wake(t)
		}
	}
	f.mu.Lock()
	ws := f.waiters[t.ID]
	delete(f.waiters, t.ID)
	f.mu.Unlock()
	for _, w := range ws {
		w <- t
	}
}

// Update is the task event a parent chat records for t.
func Update(t task.Task) conversation.TaskUpdate {
	ev := conversation.TaskUpdate{
		TaskID: t.ID, ConversationID: t.ConversationID, TaskKind: t.Kind, Status: t.Status, Title: t.Title, By: t.By,
		GroupID: t.GroupID, Part: t.Part, Parts: t.Parts, Error: t.Error, Note: t.Note,
	}
	if t.Worktree != nil && t.Worktree.Kept {
		ev.Branch = t.Worktree.Branch
	}
	return ev
}

// flowTaint carries a finished task's taint back into its parent: what a
// helper read leaves its parent as wary as if the parent had read it.
func (f *Follower) flowTaint(t task.Task) {
	c, err := f.chats.Snapshot(t.ConversationID)
	if err != nil || !c.Tainted {
		return
	}
	what := "background task"
	if t.Kind == task.Helper {
		what = "helper"
	}
	_ = f.chats.Taint(t.ParentConversationID, fmt.Sprintf("the %s %q read content from outside", what, t.Title))
}

// wake gives the parent's assistant its turn on the result, once.
func (f *Follower) wake(t task.Task) {
	if err := f.chats.Wake(t.ParentConversationID); err != nil {
		return // Conch is closing: the wake stays pending for the next start
	}
	_, _ = f.tasks.Amend(t.ID, func(t *task.Task) { t.Wake = task.WakeSent })
}
