package chattask

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// Follower brings what happens to a task back to the chat it came from:
// every status change as a task event (the chat folds them into one card),
// a background task's result, the taint a helper picked up, and one wake
// of the chat's assistant when it asked for the work. It also tells
// whoever waits for a task (delegate) that it finished.
//
// It observes the runner, which shows it every stored change in order: a
// queue keeps them, so the runner never waits on a chat. Make it before
// the runner starts, Start it after; Stop is safe twice and before Start.
type Follower struct {
	chats *chat.Manager
	tasks *taskrun.Runner

	mu      sync.Mutex // guards the fields below
	queue   []change
	waiters map[string][]chan task.Task
	started bool
	stopped bool

	signal chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

// NewFollower returns a follower of tasks' changes that posts to chats;
// it observes tasks from now on, so make it before tasks starts (what the
// runner changes while it heals is told as any other change).
func NewFollower(chats *chat.Manager, tasks *taskrun.Runner) (*Follower, error) {
	f := &Follower{
		chats: chats, tasks: tasks, waiters: map[string][]chan task.Task{},
		signal: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if err := tasks.Observe(f.observe); err != nil {
		return nil, err
	}
	return f, nil
}

// Start settles the worktrees of helpers a Conch that died left
// unsettled (SettleLeft), delivers the wakes it still owed, and follows
// the changes from then on. Start it after the runner has healed: the
// changes it made meanwhile are queued already.
func (f *Follower) Start(context.Context) error {
	f.mu.Lock()
	if f.started || f.stopped {
		f.mu.Unlock()
		return errors.New("start following tasks: already started or stopped")
	}
	f.mu.Unlock()
	SettleLeft(f.tasks)
	// Read before taking f.mu: the runner calls observe (which takes f.mu)
	// with a task's lock held.
	all, err := f.tasks.OwedWakes()
	if err != nil {
		return fmt.Errorf("start following tasks: %w", err)
	}
	f.mu.Lock()
	if f.started || f.stopped {
		f.mu.Unlock()
		return errors.New("start following tasks: already started or stopped")
	}
	f.started = true
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
	return nil
}

// Stop ends the follower.
func (f *Follower) Stop() {
	f.mu.Lock()
	started, stopped := f.started, f.stopped
	f.stopped = true
	f.mu.Unlock()
	if stopped || !started {
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

// observe is the runner's hook: it queues the change and returns at once.
func (f *Follower) observe(prev task.Status, t task.Task) {
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
