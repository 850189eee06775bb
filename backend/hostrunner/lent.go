package hostrunner

import (
	"context"
	"errors"
	"sync"

	"conch/backend/event"
	"conch/backend/provider/registry"
	"conch/backend/startstop"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// returner lets go of the providers a desktop lent this runner (their
// keys with them) as soon as the task each was lent for has ended or
// gone: a key lives here, in memory, only for its run.
type returner struct {
	bus   *event.Bus
	reg   *registry.Registry
	tasks *taskrun.Runner

	mu   sync.Mutex
	life startstop.State
}

// Start follows the tasks' changes; Stop ends that. Stop is safe twice and
// before Start.
func (r *returner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.life.Start(ctx); err != nil {
		return err
	}
	r.life.WG.Go(r.follow)
	return nil
}

func (r *returner) Stop() { r.life.Stop(&r.mu, nil) }

// follow unlends at each task that ends or goes; a subscription dropped
// for falling behind is made again, and every borrower looked at anew.
func (r *returner) follow() {
	ctx := r.life.Context()
	for ctx.Err() == nil {
		sub := r.bus.Subscribe(256)
		r.sweep()
		r.listen(ctx, sub)
		sub.Close()
	}
}

// listen unlends for each task the subscription says ended or went.
func (r *returner) listen(ctx context.Context, sub *event.Subscription) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Done():
			return
		case e := <-sub.C():
			switch {
			case e.Type == event.TaskDeleted:
				r.reg.Unlend(e.ID)
			case e.Type == event.TaskChanged && e.Task != nil && e.Task.Status.Finished():
				r.reg.Unlend(e.Task.ID)
			}
		}
	}
}

// sweep unlends for every borrower whose task has ended or is gone.
func (r *returner) sweep() {
	for _, id := range r.reg.Borrowers() {
		t, err := r.tasks.Get(id)
		if errors.Is(err, taskrun.ErrNotFound) || err == nil && ended(t) {
			r.reg.Unlend(id)
		}
	}
}

func ended(t task.Task) bool { return t.Status.Finished() }
