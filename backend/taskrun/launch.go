package taskrun

import (
	"sync"
	"time"

	"conch/backend/task"
)

// launchHold is how long a command's start waits to be stored on its own:
// one that ends sooner has it stored with its end, in one write.
const launchHold = 100 * time.Millisecond

// heldLaunch is a command's start (its pid and step) not stored yet. Any
// other change of the run stores it first, so steps keep their order; a
// write of it in flight is waited for (mu) before the run's end is stored.
type heldLaunch struct {
	mu    sync.Mutex // held while the launch is being stored
	lmu   sync.Mutex // guards the fields below
	apply func(t *task.Task)
	timer *time.Timer
}

// hold keeps apply until launchHold passes (then flush) or another change.
func (l *heldLaunch) hold(apply func(t *task.Task), flush func()) {
	l.lmu.Lock()
	defer l.lmu.Unlock()
	l.apply = apply
	if l.timer != nil {
		l.timer.Stop()
	}
	l.timer = time.AfterFunc(launchHold, flush)
}

// taken removes what is held.
func (l *heldLaunch) taken() func(t *task.Task) {
	l.lmu.Lock()
	defer l.lmu.Unlock()
	a := l.apply
	l.apply = nil
	if l.timer != nil {
		l.timer.Stop()
	}
	return a
}

// store writes what is held now.
func (l *heldLaunch) store(r *Runner, e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.taken(); a != nil {
		_, _ = r.updateEntry(e, func(t *task.Task) error { a(t); return nil })
	}
}

// take hands what is held to the run's last write, once a write of it in
// flight has landed.
func (l *heldLaunch) take() func(t *task.Task) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.taken()
}

// drop forgets what is held (a run that ended without a last write).
func (l *heldLaunch) drop() { l.taken() }
