package taskrun

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"conch/backend/ask"
	"conch/backend/output"
	"conch/backend/procmark"
	"conch/backend/task"
)

// run carries one task from queued to a finished status. It owns the slot
// it was given (h) and frees it (or passes it on) on return. st is the
// task's start when the run that passed it the slot stored it, or is
// storing it now (nil: run stores it). A panic anywhere in the run fails
// this task, saying so, and Conch carries on.
func (r *Runner) run(ctx context.Context, e *entry, h *activeRun, st *start) {
	defer r.life.WG.Done()
	defer r.endRun(e, h)
	defer r.recoverRun(e, &st)

	if st == nil {
		t, err := r.updateEntry(e, r.begin)
		if err != nil {
			// Stopped or deleted between dequeue and start: nothing to run.
			return
		}
		st = &start{t: t}
	}
	started := st.t
	ex, w, err := r.open(ctx, started, st.reattach)
	if err != nil {
		if st.wait() == nil {
			r.finish(e, nil, Outcome{}, err, nil)
		}
		return
	}
	left, tail := r.prepareLog(w, started)
	stopFlush := r.startFlush(ctx, e, w.Size)
	var held heldLaunch
	defer held.drop()
	run := r.newRun(e, h, &held, started, w, tail)
	run.Left, run.Woken, run.Reattach = left, h.wake, st.reattach
	if st.stored != nil {
		afterStart(run, st.wait)
	}
	out, runErr := r.execute(ctx, e, ex, run)
	stopFlush()
	size := w.Size()
	if err := w.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("close output: %w", err)
	}
	if st.wait() != nil {
		return // its start was never stored, so nothing of it ran
	}
	if goesOnThere(ctx, started) {
		return
	}
	// The work is over: the next task waiting takes the slot, and its
	// start is stored with this one's end, in one write.
	r.finish(e, &size, out, finishCause(ctx, runErr), r.passSlot(h), held.take())
}

// endRun lets go of what run held: its handle, its slot (unless passed on)
// and its entry; then the queue moves.
func (r *Runner) endRun(e *entry, h *activeRun) {
	e.mu.Lock()
	h.cancel(nil)
	if e.run == h { // a retry may have started the next run already
		e.run = nil
	}
	close(h.done)
	e.mu.Unlock()
	r.mu.Lock()
	if h.slot {
		r.active[h.pool]--
		h.slot = false
	}
	r.entries.ReleaseLocked(e)
	r.mu.Unlock()
	r.dispatch()
}

// recoverRun fails the task of a run that panicked, saying so (unless
// its start, *st, was never stored).
func (r *Runner) recoverRun(e *entry, st **start) {
	if v := recover(); v != nil {
		r.cfg.Log.Error("task run panicked", "task", e.id(), "panic", v, "stack", string(debug.Stack()))
		if *st == nil || (*st).wait() == nil {
			r.finish(e, nil, Outcome{}, panicked(v), nil)
		}
	}
}

// open finds the executor of a task that is starting and opens its log.
// An error is why the run ends before its work starts. A run that carries
// on work a host does (reattach) always gets its executor: a Stop that
// came first must still reach the host.
func (r *Runner) open(ctx context.Context, started task.Task, reattach bool) (Executor, *output.Writer, error) {
	if ctx.Err() != nil && !reattach { // stopped (or Conch closing) as it started
		return nil, nil, finishCause(ctx, ctx.Err())
	}
	ex := r.cfg.Executors[started.Provider]
	switch {
	case started.Host != "":
		ex = r.cfg.Hosts
	case started.ConversationID != "":
		ex = r.cfg.Conversations
	}
	if ex == nil {
		return nil, nil, fmt.Errorf("provider %q is not available", started.Provider)
	}
	if ready, reason := ex.Ready(); !ready {
		return nil, nil, errors.New(reason)
	}
	w, err := r.cfg.Logs.Open(started.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("open output: %w", err)
	}
	return ex, w, nil
}

// prepareLog marks a run after an earlier one in the log, and returns what
// the last run left (a resumed one's) and the tail of this run's output.
func (r *Runner) prepareLog(w *output.Writer, started task.Task) (string, func(n int) string) {
	if started.Host != "" {
		// The log is the host's, byte for byte, as the host writes it.
		return "", w.Tail
	}
	left := ""
	if started.Resume != nil {
		left = r.leftOf(started.ID, w.Size())
	}
	if w.Size() > 0 {
		again := "tried again"
		if started.Resume != nil {
			again = "resumed"
		}
		fmt.Fprintf(w, "\n── %s %s ──\n", again, r.cfg.Now().Local().Format("15:04:05"))
	}
	// The summary comes from this run's output only, not an earlier try's.
	runStart := w.Size()
	tail := func(n int) string {
		if this := w.Size() - runStart; int64(n) > this {
			n = int(this)
		}
		if n <= 0 {
			return ""
		}
		return w.Tail(n)
	}
	return left, tail
}

// startFlush saves the log's size while the run works, until the returned
// stop is called (which waits for the last save).
func (r *Runner) startFlush(ctx context.Context, e *entry, size func() int64) (stop func()) {
	flushDone := make(chan struct{})
	flushCtx, stopFlush := context.WithCancel(ctx)
	go func() {
		defer close(flushDone)
		r.flushOutput(flushCtx, e, size)
	}()
	return func() {
		stopFlush()
		<-flushDone
	}
}

// newRun is what the executor works with: every report it makes is stored
// through the runner, after a held launch (see heldLaunch).
func (r *Runner) newRun(e *entry, h *activeRun, held *heldLaunch, started task.Task, w *output.Writer, tail func(int) string) *Run {
	id := started.ID
	return &Run{
		Task:    started,
		Mark:    procmark.Mark{Home: r.cfg.HomeMark, Task: id},
		Output:  w,
		Tail:    tail,
		Written: w.Size,
		Progress: func(current, step string) {
			held.store(r, e)
			_, _ = r.updateEntry(e, func(t *task.Task) error {
				progress(t, current, step)
				return nil
			})
		},
		Ask: func(ctx context.Context, q ask.Question) (bool, error) {
			held.store(r, e)
			return r.ask(ctx, e, h, q)
		},
		Answer: func(askID string, allow bool) error {
			_, err := r.Answer(id, askID, allow)
			return err
		},
		Amend: func(fn func(t *task.Task)) {
			held.store(r, e)
			_, _ = r.updateEntry(e, func(t *task.Task) error {
				status := t.Status
				fn(t)
				t.Status = status // the runner alone moves a task's status
				return nil
			})
		},
		Started: func(pid int) {
			held.store(r, e)
			_, _ = r.updateEntry(e, func(t *task.Task) error { t.Pid = pid; return nil })
		},
		Launched: func(pid int, current, step string) {
			held.hold(func(t *task.Task) {
				t.Pid = pid
				progress(t, current, step)
			}, func() { held.store(r, e) })
		},
		Pause: func(p task.Paused, current string) {
			held.store(r, e)
			_, _ = r.updateEntry(e, func(t *task.Task) error {
				t.Paused, t.Current = &p, current
				return nil
			})
			r.releaseSlot(h)
		},
		Unpause: func() {
			held.store(r, e)
			r.takeSlot(h)
			_, _ = r.updateEntry(e, func(t *task.Task) error {
				t.Paused, t.Current = nil, ""
				return nil
			})
		},
	}
}

// progress sets what t does now and adds a step; an empty one stays.
func progress(t *task.Task, current, step string) {
	if current != "" {
		t.Current = current
	}
	if step != "" {
		t.AddStep(step)
	}
}

// begin marks a task that is taking its slot running.
func (r *Runner) begin(t *task.Task) error { return t.SetStatus(task.Running, r.cfg.Now()) }

// execute runs the executor, turning a panic into the task's error so one
// broken run never takes Conch down.
func (r *Runner) execute(ctx context.Context, e *entry, ex Executor, run *Run) (out Outcome, err error) {
	defer func() {
		if v := recover(); v != nil {
			r.cfg.Log.Error("task executor panicked", "task", e.id(), "panic", v, "stack", string(debug.Stack()))
			out, err = Outcome{}, panicked(v)
		}
	}()
	return ex.Execute(ctx, run)
}

// panicked is the reason of a task whose run hit a bug in Conch.
func panicked(v any) error {
	return fmt.Errorf("Conch hit an internal error while running this task (%v), so it stopped it. Try again; if it happens again, the log has the details", v)
}

// leftOf is the end of task id's log of size bytes, as its last run left
// it: at most LeftSize bytes, "" when it cannot be read (a resumed call
// then says nothing was captured rather than failing the run).
func (r *Runner) leftOf(id string, size int64) string {
	from := max(size-LeftSize, 0)
	b, _, err := r.cfg.Logs.ReadAt(id, from, LeftSize)
	if err != nil {
		return ""
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
