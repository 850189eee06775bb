package taskrun

import (
	"context"
	"errors"

	"conch/backend/ask"
	"conch/backend/task"
)

// start is how a run's task became running: t is its running record, as
// stored, or as it is being stored while the run begins (stored set, closed
// once the write has landed or failed, err saying which).
type start struct {
	t      task.Task
	stored chan struct{}
	err    error
	// reattach says t's run carries on one an earlier Conch left working
	// on its host (Run.Reattach).
	reattach bool
}

// wait returns once the start is stored, with nil, or with why it never
// was (the task did not start: nothing of the run may be stored or run).
func (s *start) wait() error {
	if s.stored == nil {
		return nil
	}
	<-s.stored
	return s.err
}

// errNotStarted answers a report of a run whose start was never stored.
var errNotStarted = errors.New("the task's start was not stored")

// startsEarly says whether t's run may begin while its start is being
// stored: its executor starts its work held until then (EarlyStarter).
func (r *Runner) startsEarly(t task.Task) bool {
	if t.ConversationID != "" || t.Host != "" {
		return false
	}
	ex, ok := r.cfg.Executors[t.Provider].(EarlyStarter)
	return ok && ex.StartsEarly()
}

// afterStart makes every report of a run that began before its start was
// stored wait for that write, and drops the report if the write failed:
// nothing of a task is stored before the record that says it is running.
func afterStart(run *Run, stored func() error) {
	run.Stored = stored
	progress, askFn, answer, amend := run.Progress, run.Ask, run.Answer, run.Amend
	started, launched, pause, unpause := run.Started, run.Launched, run.Pause, run.Unpause
	run.Progress = func(current, step string) {
		if stored() == nil {
			progress(current, step)
		}
	}
	run.Ask = func(ctx context.Context, q ask.Question) (bool, error) {
		if stored() != nil {
			return false, errNotStarted
		}
		return askFn(ctx, q)
	}
	run.Answer = func(askID string, allow bool) error {
		if stored() != nil {
			return errNotStarted
		}
		return answer(askID, allow)
	}
	run.Amend = func(fn func(t *task.Task)) {
		if stored() == nil {
			amend(fn)
		}
	}
	run.Started = func(pid int) {
		if stored() == nil {
			started(pid)
		}
	}
	run.Launched = func(pid int, current, step string) {
		if stored() == nil {
			launched(pid, current, step)
		}
	}
	run.Pause = func(p task.Paused, current string) {
		if stored() == nil {
			pause(p, current)
		}
	}
	run.Unpause = func() {
		if stored() == nil {
			unpause()
		}
	}
}
