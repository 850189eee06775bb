package taskrun

import (
	"context"
	"errors"
	"time"

	"conch/backend/event"
	"conch/backend/task"
)

// outputFlush is how often a running task's outputBytes is saved and
// announced, so live views know there is more to read without a write per
// chunk of output.
const outputFlush = 250 * time.Millisecond

// finishCause says why a run ended: stopped by the person, interrupted by
// shutdown, or the executor's own error (nil for done). An executor that
// says it was stopped (its chat's Stop) ends it stopped too.
func finishCause(ctx context.Context, runErr error) error {
	if cause := context.Cause(ctx); cause != nil {
		if errors.Is(cause, errStopped) {
			return errStopped
		}
		return errInterrupted
	}
	if errors.Is(runErr, ErrStopped) {
		return errStopped
	}
	return runErr
}

//lint:ignore ST1005 the task's reason, shown to the person as a sentence
var errInterrupted = errors.New(InterruptedReason)

// goesOnThere says a run of a task on a host ended because this Conch is
// stopping: the work goes on on the host, so its record stays as it is and
// the next start follows it again.
func goesOnThere(ctx context.Context, t task.Task) bool {
	cause := context.Cause(ctx)
	return t.Host != "" && cause != nil && !errors.Is(cause, errStopped)
}

// finish writes the run's final status, after first (a held launch).
// With next (the task its slot passed to), next's start is stored in the
// same write and next's run started.
func (r *Runner) finish(e *entry, size *int64, out Outcome, cause error, next *queuedRun, first ...func(t *task.Task)) {
	end := func(t *task.Task) error {
		for _, f := range first {
			if f != nil {
				f(t)
			}
		}
		if size != nil {
			t.OutputBytes = *size
		}
		t.ExitCode = out.ExitCode
		t.Summary = out.Summary
		for _, step := range out.Steps {
			t.AddStep(step)
		}
		t.Paused = nil // however it ended, it waits on nothing now
		if out.Result != nil {
			res := *out.Result
			t.Result = &res
		}
		now := r.cfg.Now()
		switch {
		case cause == nil:
			return t.SetStatus(task.Done, now)
		case errors.Is(cause, errStopped):
			t.AddStep("Stopped")
			return t.SetStatus(task.Stopped, now)
		case errors.Is(cause, errInterrupted):
			t.Error = cause.Error()
			return t.SetStatus(task.Interrupted, now)
		default:
			t.Error = cause.Error()
			return t.SetStatus(task.Failed, now)
		}
	}
	if next == nil {
		_, _ = r.updateEntry(e, end) // refused: the task already ended (e.g. deleted)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	next.e.mu.Lock() // a queued task's: never a running one's, so never the other way round
	defer next.e.mu.Unlock()
	w := r.prepareLocked(change{e, end}, change{next.e, r.begin})
	if b := w.next[1]; b != nil && r.startsEarly(*b) {
		// next's work begins while its start is written, held until the
		// write lands (Run.Stored).
		st := &start{t: b.Clone(), stored: make(chan struct{})}
		go r.run(next.ctx, next.e, next.h, st)
		_, errs := r.commitLocked(w)
		if errs[1] != nil {
			// The write failed whole: next's start alone, as its run
			// stores it when it is not passed one.
			_, errs = r.commitLocked(&write{cs: w.cs[1:], next: w.next[1:], errs: make([]error, 1)})
		}
		st.err = errs[len(errs)-1]
		close(st.stored)
		return
	}
	ts, errs := r.commitLocked(w)
	var st *start
	if errs[1] == nil {
		st = &start{t: ts[1]}
	}
	go r.run(next.ctx, next.e, next.h, st)
}

// outputNotice is how often a running task's growing log is announced
// (task.output, never stored), so an open page reads new output within
// that, not at the next save.
const outputNotice = 50 * time.Millisecond

// flushOutput saves the log's size while the task runs, and announces it
// more often.
func (r *Runner) flushOutput(ctx context.Context, e *entry, size func() int64) {
	tick := time.NewTicker(outputFlush)
	defer tick.Stop()
	notice := time.NewTicker(outputNotice)
	defer notice.Stop()
	var told int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-notice.C:
			if n := size(); n > told {
				told = n
				r.cfg.Bus.Publish(event.Event{Type: event.TaskOutput, ID: e.id(), OutputBytes: n})
			}
		case <-tick.C:
			n := size()
			e.mu.Lock()
			same := e.t.OutputBytes == n
			e.mu.Unlock()
			if !same {
				_, _ = r.updateEntry(e, func(t *task.Task) error { t.OutputBytes = n; return nil })
			}
		}
	}
}
