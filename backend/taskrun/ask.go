package taskrun

import (
	"context"
	"time"

	"github.com/google/uuid"

	"conch/backend/ask"
	"conch/backend/task"
)

// ask puts q on the task and waits for Answer, q's expiry or ctx. While it
// waits the run gives up its slot (a question never holds up the queue);
// answered, it takes one back at once, over the limit if it must. A
// question made elsewhere (a chat's) keeps its id and expiry: one record,
// one clock; one without them gets a new id and AskTimeout.
func (r *Runner) ask(ctx context.Context, e *entry, h *activeRun, q ask.Question) (bool, error) {
	now := r.cfg.Now().UTC()
	if q.ID == "" {
		q.ID = uuid.NewString()
	}
	if q.AskedAt.IsZero() || q.ExpiresAt.IsZero() {
		change := q.Change
		q = ask.New(q.ID, q.CallID, q.Tool, q.Detail, now, r.cfg.AskTimeout)
		q.Change = change
	}
	answer := make(chan bool, 1)
	e.mu.Lock()
	_, err := r.updateLocked(e, func(t *task.Task) error {
		if err := t.SetStatus(task.NeedsYou, now); err != nil {
			return err
		}
		t.Ask = &q
		t.Current = "Waiting for your OK"
		return nil
	})
	if err == nil {
		e.askID, e.answer = q.ID, answer
	}
	e.mu.Unlock()
	if err != nil {
		return false, err
	}
	r.releaseSlot(h)
	defer r.takeSlot(h)
	timer := time.NewTimer(q.ExpiresAt.Sub(now))
	defer timer.Stop()
	select {
	case allow := <-answer:
		if !allow {
			return false, ErrDeclined
		}
		return true, nil
	case <-ctx.Done():
	case <-timer.C:
	}
	e.mu.Lock()
	pending := e.askID == q.ID
	e.askID = ""
	if pending && ctx.Err() == nil {
		// Timed out: denied, and the task works on (or ends) saying why.
		_, _ = r.updateLocked(e, func(t *task.Task) error {
			t.Ask = nil
			t.Current = ""
			t.AddStep("No answer within an hour, so it did not run")
			return t.SetStatus(task.Running, r.cfg.Now())
		})
	}
	e.mu.Unlock()
	if !pending { // answered at the same moment: the answer wins
		if allow := <-answer; allow {
			return true, nil
		}
		return false, ErrDeclined
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	return false, ErrNoAnswer
}
