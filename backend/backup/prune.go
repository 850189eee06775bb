package backup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"conch/backend/pref"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// PruneEvery is how often a Pruner looks for tasks past their retention
// after the look it takes at start.
const PruneEvery = 24 * time.Hour

// Tasks is the part of the runner a Pruner uses (*taskrun.Runner): the
// runner owns the records, so a pruned task goes the way a deleted one does
// (store, log, task.deleted event), and one that runs again meanwhile is
// refused rather than pulled from under its run.
type Tasks interface {
	// FinishedBefore are up to limit finished tasks that ended before
	// cutoff, the longest ago first.
	FinishedBefore(cutoff time.Time, limit int) ([]task.Task, error)
	Delete(id string) error
}

// pruneBatch is how many expired tasks one read of the store brings.
const pruneBatch = 200

// PruneConfig wires a Pruner.
type PruneConfig struct {
	Tasks       Tasks
	Preferences func() pref.Preferences // RetentionDays is read at every look
	Every       time.Duration           // 0: PruneEvery
	Now         func() time.Time        // nil: time.Now
	Log         *slog.Logger            // nil: discarded
}

// Pruner deletes finished tasks (done, failed, stopped, interrupted) whose
// end is more than the preferences' RetentionDays ago, with their output
// logs; their chats stay. A helper whose worktree was kept (it holds work)
// is never pruned: its record is how the person finds the branch and says
// what becomes of it. RetentionDays 0 keeps everything. Start it once; Stop
// is safe twice and before Start.
type Pruner struct {
	cfg PruneConfig

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewPruner returns a Pruner; Start begins its looks.
func NewPruner(cfg PruneConfig) *Pruner {
	if cfg.Every <= 0 {
		cfg.Every = PruneEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Pruner{cfg: cfg}
}

// Start prunes at once, then every cfg.Every, until Stop or ctx ends. The
// looks run in a goroutine of the Pruner's, so Start does not wait.
func (p *Pruner) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.stopped {
		return errors.New("start pruner: already started or stopped")
	}
	p.started = true
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		tick := time.NewTicker(p.cfg.Every)
		defer tick.Stop()
		for {
			if _, err := p.Prune(); err != nil {
				p.cfg.Log.Warn("prune finished tasks", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return nil
}

// Stop ends the looks and waits for one in progress.
func (p *Pruner) Stop() {
	p.mu.Lock()
	p.stopped = true
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Prune deletes every task past its retention now and returns their ids.
// A task that changed meanwhile (retried, deleted) is left to its new
// life; other failures are joined in the error, and the rest go on.
func (p *Pruner) Prune() ([]string, error) {
	days := p.cfg.Preferences().RetentionDays
	if days <= 0 {
		return nil, nil
	}
	cutoff := p.cfg.Now().Add(-time.Duration(days) * 24 * time.Hour)
	var pruned []string
	var errs []error
	// Read the oldest a batch at a time; what stays (a kept worktree, a
	// task retried meanwhile) is read again, so the next batch is longer.
	for kept := 0; ; {
		limit := pruneBatch + kept
		tasks, err := p.cfg.Tasks.FinishedBefore(cutoff, limit)
		if err != nil {
			errs = append(errs, fmt.Errorf("prune: read the finished tasks: %w", err))
			break
		}
		kept = 0
		for _, t := range tasks {
			if !Expired(t, cutoff) {
				kept++
				continue
			}
			err := p.cfg.Tasks.Delete(t.ID)
			switch {
			case err == nil:
				pruned = append(pruned, t.ID)
			case errors.Is(err, taskrun.ErrNotFound):
			case errors.Is(err, taskrun.ErrConflict):
				kept++
			default:
				kept++
				errs = append(errs, fmt.Errorf("prune task %s: %w", t.ID, err))
			}
		}
		if len(tasks) < limit {
			break
		}
	}
	return pruned, errors.Join(errs...)
}

// Expired reports whether t is a finished task that ended before cutoff
// and may be pruned (not a helper with a kept worktree).
func Expired(t task.Task, cutoff time.Time) bool {
	if !t.Status.Finished() || t.EndedAt == nil || !t.EndedAt.Before(cutoff) {
		return false
	}
	return t.Worktree == nil || !t.Worktree.Kept
}
