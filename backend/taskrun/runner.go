// Package taskrun runs tasks: per-kind slots with a FIFO queue, stop, retry,
// delete, answering questions, and healing at start.
//
// Every change to a task goes through one path (update): it is applied to a
// copy, written to the store, and only then kept and published, so a crash at
// any point leaves a record that healing can explain.
package taskrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"conch/backend/ask"
	"conch/backend/event"
	"conch/backend/internal/refcache"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/procmark"
	"conch/backend/startstop"
	"conch/backend/store"
	"conch/backend/task"
)

// InterruptedReason is the error of a task that was running when Conch stopped.
const InterruptedReason = "Conch stopped while this was running."

// stopGrace is how long Stop waits for a run to end before answering.
const stopGrace = 10 * time.Second

// errStopped is the cause a stop cancels a run with.
var errStopped = ErrStopped

// Config wires a Runner.
type Config struct {
	Store     store.Store
	Bus       *event.Bus
	Logs      *output.Logs
	Executors map[string]Executor
	// Conversations runs every task that has a chat of its own
	// (ConversationID set), whatever its provider.
	Conversations Executor
	// Hosts runs every task that has a host (SPEC §6); nil: none can.
	Hosts Hosts
	// ClientIDs lets a new task's request name its id (a host's runner,
	// whose desktop gives the same id to the same task on both sides).
	ClientIDs bool
	// Observe, if set, sees every stored change of a task, in order. It is
	// called with the task's lock held: it must not block or call back.
	Observe func(prev task.Status, t task.Task)
	// Home is the folder a task without cwd runs in.
	Home string
	// AskTimeout overrides ask.Timeout for the questions the runner makes
	// (tests); a question made elsewhere (a chat's) keeps its own expiry.
	AskTimeout time.Duration
	// Now overrides time.Now (tests).
	Now func() time.Time
	// HomeMark names this home (procmark.HomeMark); every process a task
	// starts carries it with the task's id, and healing ends only processes
	// that carry both. Empty: healing ends nothing.
	HomeMark string
	// Reap ends what an earlier Conch left running for a task: processes
	// that carry mark, and the group pgid (0: none recorded) if its leader
	// does. Nil uses procmark.Reap.
	Reap func(mark procmark.Mark, pgid int)
	// Log records what the person cannot act on (a recovered panic's
	// stack); nil discards it.
	Log *slog.Logger
}

// Runner owns every task's life. Start it once, Stop it once (Stop is safe
// twice and before Start).
type Runner struct {
	cfg Config

	mu sync.Mutex // guards the fields below
	// entries holds every task that is not finished, and a bounded cache
	// of finished ones (see acquire): a finished task nobody holds is read
	// from the store, so memory does not grow with the tasks kept.
	entries *refcache.Cache[string, *entry]
	queue   map[pool][]string
	active  map[pool]int
	limits  pref.Limits
	// idMu makes a new task with a given id either the only one with it
	// or refused.
	idMu sync.Mutex
	// life is started by Start and ended by Stop; every run is counted
	// in its WG and runs under its context.
	life startstop.State
}

// entry is the live state of one task; mu orders its changes.
type entry struct {
	// Counted counts who holds it: a held entry is never dropped from
	// the cache, so no change is ever made through an entry that is not
	// the task's only one.
	refcache.Counted

	mu  sync.Mutex
	t   task.Task
	run *activeRun // the run in progress, from dispatch until it has ended
	// deleted is set by Delete: no change is stored after it, so a run or
	// a follower that still holds the entry can never write it back.
	deleted bool
	askID   string // the pending question, if any
	answer  chan bool
}

// activeRun is one run of a task. Each run owns its handle, so a run that
// ends after a retry started the next one only ever clears its own.
type activeRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the run has ended
	pool   pool
	// wake is signalled by Resume while the run's task is paused.
	wake chan struct{}
	// slot says the run counts against its kind's limit (guarded by
	// Runner.mu): it does not while it waits on the person.
	slot bool
}

// New returns a runner; call Start before use.
func New(cfg Config) *Runner {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AskTimeout == 0 {
		cfg.AskTimeout = ask.Timeout
	}
	if cfg.Reap == nil {
		cfg.Reap = func(m procmark.Mark, pgid int) { procmark.Reap(m, pgid) }
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{
		cfg:    cfg,
		queue:  map[pool][]string{},
		active: map[pool]int{},
		limits: pref.Defaults().Limits,
	}
	r.entries = refcache.New[string](&r.mu, cacheSize, finished)
	return r
}

// Start loads the tasks that are not finished (the others stay in the
// store until asked for), heals the ones a dead Conch left running, queues
// the waiting ones and starts dispatching.
func (r *Runner) Start(ctx context.Context) error {
	prefs, err := r.cfg.Store.Preferences()
	if err != nil {
		return fmt.Errorf("start runner: %w", err)
	}
	tasks, err := r.cfg.Store.ActiveTasks()
	// Records that cannot be read stay in the store untouched; the rest run.
	if err != nil && !errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("start runner: %w", err)
	}
	r.mu.Lock()
	if _, err := r.life.Start(ctx); err != nil {
		r.mu.Unlock()
		return fmt.Errorf("start runner: %w", err)
	}
	r.limits = prefs.Limits
	for _, t := range tasks {
		r.entries.Put(t.ID, &entry{t: t})
	}
	r.mu.Unlock()

	var reattach []task.Task
	for _, t := range tasks {
		switch t.Status {
		case task.Running, task.NeedsYou:
			if t.Host != "" {
				// Its work carries on on the host, without this Conch.
				reattach = append(reattach, t)
				continue
			}
			if r.cfg.HomeMark != "" {
				r.cfg.Reap(procmark.Mark{Home: r.cfg.HomeMark, Task: t.ID}, t.Pid)
			}
			size, serr := r.cfg.Logs.Size(t.ID)
			if _, err := r.update(t.ID, func(t *task.Task) error {
				// The log, not the last flush, says how much it printed.
				if serr == nil {
					t.OutputBytes = size
				}
				t.Error = InterruptedReason
				t.Paused = nil
				t.AddStep("Interrupted when Conch stopped")
				return t.SetStatus(task.Interrupted, r.cfg.Now())
			}); err != nil {
				return fmt.Errorf("heal task %s: %w", t.ID, err)
			}
		case task.Queued:
			r.mu.Lock()
			r.queue[poolOf(t)] = append(r.queue[poolOf(t)], t.ID)
			r.mu.Unlock()
		}
	}
	for _, t := range reattach {
		if err := r.reattach(t); err != nil {
			return fmt.Errorf("follow task %s on %s: %w", t.ID, t.Host, err)
		}
	}
	r.dispatch()
	return nil
}

// Stop ends every run (their tasks become interrupted, but for those on a
// host, whose work goes on there) and waits for them.
func (r *Runner) Stop() { r.life.Stop(&r.mu, nil) }

// id is the task's id, which never changes.
func (e *entry) id() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.t.ID
}
