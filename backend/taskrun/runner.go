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
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"conch/backend/ask"
	"conch/backend/event"
	"conch/backend/internal/lru"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/procmark"
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
	entries map[string]*entry
	tick    int64 // counts uses, to find the least recently used
	queue   map[task.Kind][]string
	active  map[task.Kind]int
	limits  pref.Limits
	started bool
	closed  bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// entry is the live state of one task; mu orders its changes.
type entry struct {
	// refs counts who holds it and used when it was last held (both
	// guarded by Runner.mu): a held entry is never dropped from the cache,
	// so no change is ever made through an entry that is not the task's
	// only one.
	refs int
	used int64

	mu  sync.Mutex
	t   task.Task
	run *activeRun // the run in progress, from dispatch until it has ended
	// deleted is set by Delete: no change is stored after it, so a run or
	// a follower that still holds the entry can never write it back.
	deleted bool
	askID   string // the pending question, if any
	answer  chan bool
	// wake is the running run's: Resume signals it while the task is
	// paused.
	wake chan struct{}
}

// activeRun is one run of a task. Each run owns its handle, so a run that
// ends after a retry started the next one only ever clears its own.
type activeRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the run has ended
	kind   task.Kind
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
	return &Runner{
		cfg:     cfg,
		entries: map[string]*entry{},
		queue:   map[task.Kind][]string{},
		active:  map[task.Kind]int{},
		limits:  pref.Defaults().Limits,
	}
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
	if r.started || r.closed {
		r.mu.Unlock()
		return errors.New("start runner: already started or stopped")
	}
	r.started = true
	r.limits = prefs.Limits
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, t := range tasks {
		r.entries[t.ID] = &entry{t: t}
	}
	r.mu.Unlock()

	for _, t := range tasks {
		switch t.Status {
		case task.Running, task.NeedsYou:
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
			r.queue[t.Kind] = append(r.queue[t.Kind], t.ID)
			r.mu.Unlock()
		}
	}
	r.dispatch()
	return nil
}

// Stop ends every run (their tasks become interrupted) and waits for them.
func (r *Runner) Stop() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.wg.Wait()
}

// SetLimits changes how many tasks of each kind run at once.
func (r *Runner) SetLimits(l pref.Limits) {
	r.mu.Lock()
	r.limits = l
	r.mu.Unlock()
	r.dispatch()
}

// Options are the optional settings of a new task.
type Options struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	// Check is a command run in the task's folder once it has done its
	// work: the task is done only when it exits 0 (SPEC §4.2).
	Check string `json:"check,omitempty"`
	// CheckRetries is how many more turns a chat task's model gets to
	// make a failing check pass (default 1, at most MaxCheckRetries).
	CheckRetries *int `json:"checkRetries,omitempty"`
}

// CreateRequest is what it takes to start a background task.
type CreateRequest struct {
	Text           string  `json:"text"`
	ConversationID string  `json:"conversationId,omitempty"`
	Title          string  `json:"title,omitempty"`
	Options        Options `json:"options,omitempty"`
}

// Create validates req, writes the task as queued and schedules it.
func (r *Runner) Create(req CreateRequest) (task.Task, error) {
	t, err := r.newTask(req)
	if err != nil {
		return task.Task{}, err
	}
	if ex, ok := r.cfg.Executors[t.Provider]; ok {
		if ready, reason := ex.Ready(); !ready {
			t.Status = task.Failed
			t.Error = reason
			now := r.cfg.Now()
			t.EndedAt = &now
		}
	}
	return r.insert(t)
}

// Insert schedules a task prepared elsewhere (a chat's background task, a
// delegate part): its id, kind, chat, provider, mode and folder are set by
// the caller and checked here. A task given as failed (its provider was
// not ready) is stored as it is and never runs.
func (r *Runner) Insert(t task.Task) (task.Task, error) {
	if t.Status != task.Failed {
		t.Status = task.Queued
	}
	if t.Steps == nil {
		t.Steps = []string{}
	}
	if t.Wake == "" {
		t.Wake = task.WakeNone
	}
	if strings.TrimSpace(t.Title) == "" {
		t.Title = task.TitleFrom(t.Text)
	}
	if err := Validate(t); err != nil {
		return task.Task{}, err
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = r.cfg.Now().UTC()
	}
	if t.Status == task.Failed && t.EndedAt == nil {
		now := r.cfg.Now()
		t.EndedAt = &now
	}
	return r.insert(t)
}

// Bounds on what a task is asked to do; larger work belongs in a file.
const (
	MaxText  = 64 << 10
	MaxTitle = 200
)

// ValidateText refuses a task's text and title that can never run: empty or
// longer than MaxText, a title longer than MaxTitle.
func ValidateText(text, title string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("%w: text is empty: write what the task should do", ErrInvalid)
	}
	if len(text) > MaxText {
		return fmt.Errorf("%w: text is longer than %d KiB", ErrInvalid, MaxText>>10)
	}
	if len(strings.TrimSpace(title)) > MaxTitle {
		return fmt.Errorf("%w: title is longer than %d bytes", ErrInvalid, MaxTitle)
	}
	return nil
}

// Validate is the one gate every new task passes, whoever made it: an id, a
// kind, a mode, text and title within bounds, and a folder that is an
// absolute path to a folder that exists.
func Validate(t task.Task) error {
	if t.ID == "" || !t.Kind.Valid() {
		return fmt.Errorf("%w: a task needs an id and a kind (background or helper)", ErrInvalid)
	}
	if !t.Mode.Valid() {
		return fmt.Errorf("%w: unknown mode %q (plan, ask, edits or auto)", ErrInvalid, t.Mode)
	}
	if err := ValidateText(t.Text, t.Title); err != nil {
		return err
	}
	if !filepath.IsAbs(t.Cwd) {
		return fmt.Errorf("%w: folder %q is not an absolute path", ErrInvalid, t.Cwd)
	}
	if fi, err := os.Stat(t.Cwd); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: folder %s does not exist", ErrInvalid, t.Cwd)
	}
	if t.Check != "" {
		if err := validateCheck(t.Check); err != nil {
			return err
		}
		if t.Mode == task.Plan {
			return fmt.Errorf("%w: a check runs a command, which plan mode refuses; pick ask, edits or auto, or leave the check out", ErrInvalid)
		}
	}
	return nil
}

// MaxCheck bounds a check command; MaxCheckRetries the extra turns.
const (
	MaxCheck        = 4 << 10
	MaxCheckRetries = 5
)

// ValidateRetries validates a check command and its retries as a request
// gives them, and returns the retries to keep (1 when none are given).
func ValidateRetries(check string, retries *int) (int, error) {
	if strings.TrimSpace(check) == "" {
		if retries != nil {
			return 0, fmt.Errorf("%w: checkRetries needs a check command", ErrInvalid)
		}
		return 0, nil
	}
	if err := validateCheck(check); err != nil {
		return 0, err
	}
	if retries == nil {
		return 1, nil
	}
	if *retries < 0 || *retries > MaxCheckRetries {
		return 0, fmt.Errorf("%w: checkRetries must be 0 to %d", ErrInvalid, MaxCheckRetries)
	}
	return *retries, nil
}

func validateCheck(check string) error {
	switch {
	case len(check) > MaxCheck:
		return fmt.Errorf("%w: the check command is longer than %d KiB", ErrInvalid, MaxCheck>>10)
	case strings.ContainsRune(check, 0):
		return fmt.Errorf("%w: the check command holds a NUL byte", ErrInvalid)
	}
	return nil
}

func (r *Runner) insert(t task.Task) (task.Task, error) {
	t.Rev = 1
	if err := r.cfg.Store.PutTask(t); err != nil {
		return task.Task{}, fmt.Errorf("create task: %w", err)
	}
	e := &entry{t: t}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return task.Task{}, errors.New("create task: Conch is shutting down")
	}
	r.entries[t.ID] = e
	if t.Status == task.Queued {
		r.queue[t.Kind] = append(r.queue[t.Kind], t.ID)
	}
	// Publish under r.mu so the queued copy goes out before dispatch can
	// announce the running one.
	r.publish("", t)
	r.mu.Unlock()
	r.dispatch()
	return t.Clone(), nil
}

func (r *Runner) newTask(req CreateRequest) (task.Task, error) {
	o := req.Options
	if o.Provider == "" {
		o.Provider = "shell"
	}
	if _, ok := r.cfg.Executors[o.Provider]; !ok {
		return task.Task{}, fmt.Errorf("%w: unknown provider %q (known: %s)", ErrInvalid, o.Provider, strings.Join(r.providerNames(), ", "))
	}
	mode := task.Mode(o.Mode)
	if o.Mode == "" {
		mode = task.Ask
	}
	retries, err := ValidateRetries(o.Check, o.CheckRetries)
	if err != nil {
		return task.Task{}, err
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = r.cfg.Home
	}
	if filepath.IsAbs(cwd) {
		cwd = filepath.Clean(cwd)
	}
	title := strings.TrimSpace(req.Title)
	if title == "" {
		title = task.TitleFrom(req.Text)
	}
	t := task.Task{
		ID:                   store.NewID(),
		Kind:                 task.Background,
		Status:               task.Queued,
		Title:                title,
		Text:                 req.Text,
		ParentConversationID: req.ConversationID,
		Provider:             o.Provider,
		Model:                o.Model,
		Mode:                 mode,
		Cwd:                  cwd,
		Check:                strings.TrimSpace(o.Check),
		CheckRetries:         retries,
		Steps:                []string{},
		Wake:                 task.WakeNone,
		CreatedAt:            r.cfg.Now().UTC(),
	}
	return t, Validate(t)
}

func (r *Runner) providerNames() []string {
	var names []string
	for n := range r.cfg.Executors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns one task: the live record, else the stored one (which is
// never behind it: every change is stored first).
func (r *Runner) Get(id string) (task.Task, error) {
	r.mu.Lock()
	e, ok := r.entries[id]
	r.mu.Unlock()
	if ok {
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.deleted {
			return e.t.Clone(), nil
		}
		return task.Task{}, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	t, err := r.cfg.Store.Task(id)
	if errors.Is(err, store.ErrNotFound) {
		return task.Task{}, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	return t, err
}

// Slots reports how many tasks of a kind hold a slot, and the limit.
type Slots struct {
	Running int `json:"running"`
	Limit   int `json:"limit"`
}

// Concurrent is the slot use of both kinds.
type Concurrent struct {
	Background Slots `json:"background"`
	Helper     Slots `json:"helper"`
}

// Active returns every task that is not finished, oldest first, and the
// slot use.
func (r *Runner) Active() ([]task.Task, Concurrent) {
	r.mu.Lock()
	entries := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		entries = append(entries, e)
	}
	c := r.concurrentLocked()
	r.mu.Unlock()
	out := make([]task.Task, 0, len(entries))
	for _, e := range entries {
		e.mu.Lock()
		if !e.deleted && !e.t.Status.Finished() {
			out = append(out, e.t.Clone())
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, c
}

// Concurrent is the slot use now.
func (r *Runner) Concurrent() Concurrent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.concurrentLocked()
}

func (r *Runner) concurrentLocked() Concurrent {
	return Concurrent{
		Background: Slots{Running: r.active[task.Background], Limit: r.limits.Background},
		Helper:     Slots{Running: r.active[task.Helper], Limit: r.limits.Helper},
	}
}

// Page is a page of one status group's tasks in the tasks page's order
// (see store.TasksInGroup). The store is never behind the live records:
// every change is stored before it is kept.
func (r *Runner) Page(g store.Group, f store.TaskFilter, cursor string, limit int) (store.Page, error) {
	return pageOf(r.cfg.Store.TasksInGroup(g, f, cursor, limit))
}

// TasksOf is a page of the tasks sent from chat parent, newest first.
func (r *Runner) TasksOf(parent, cursor string, limit int) (store.Page, error) {
	return pageOf(r.cfg.Store.TasksOf(parent, cursor, limit))
}

// pageOf turns the store's refusal of a cursor into the runner's.
func pageOf(p store.Page, err error) (store.Page, error) {
	if errors.Is(err, store.ErrBadCursor) {
		return p, fmt.Errorf("%w: the cursor is not one this list gave out", ErrInvalid)
	}
	return p, err
}

// UnsettledWorktrees are the helpers whose worktree is not settled yet.
func (r *Runner) UnsettledWorktrees() ([]task.Task, error) { return r.cfg.Store.UnsettledWorktrees() }

// OwedWakes are the finished tasks whose chat still waits for a turn on
// their result.
func (r *Runner) OwedWakes() ([]task.Task, error) { return r.cfg.Store.OwedWakes() }

// FinishedBefore are up to limit finished tasks that ended before cutoff,
// the longest ago first.
func (r *Runner) FinishedBefore(cutoff time.Time, limit int) ([]task.Task, error) {
	return r.cfg.Store.FinishedBefore(cutoff, limit)
}

// Counts is how many tasks there are in each status.
func (r *Runner) Counts() (map[task.Status]int, error) { return r.cfg.Store.TaskCounts() }

// Approval is one pending question, as the approval inbox lists it.
type Approval struct {
	TaskID string `json:"taskId"`
	// ConversationID is the task's own chat ("" for a shell command).
	ConversationID string       `json:"conversationId"`
	Title          string       `json:"title"`
	Cwd            string       `json:"cwd"`
	Ask            ask.Question `json:"ask"`
}

// Approvals lists every pending question, oldest first.
func (r *Runner) Approvals() []Approval {
	tasks, _ := r.Active()
	out := []Approval{}
	for _, t := range tasks {
		if t.Status == task.NeedsYou && t.Ask != nil {
			out = append(out, Approval{TaskID: t.ID, ConversationID: t.ConversationID, Title: t.Title, Cwd: t.Cwd, Ask: *t.Ask})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ask.AskedAt.Before(out[j].Ask.AskedAt) })
	return out
}

// StopTask stops a waiting, working or asking task. A working task is sent
// SIGTERM (then SIGKILL); StopTask waits briefly for it to end.
func (r *Runner) StopTask(id string) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	if t, ok, err := r.stopQueued(id, e); ok {
		return t, err
	}
	e.mu.Lock()
	// A task just taken from the queue has its run before it is marked
	// running: stopping it then stops that run.
	h := e.run
	if h == nil || !(e.t.Status.Active() || e.t.Status == task.Queued) {
		t := e.t.Clone()
		e.mu.Unlock()
		return t, &task.TransitionError{ID: id, From: t.Status, To: task.Stopped}
	}
	h.cancel(errStopped)
	done := h.done
	e.mu.Unlock()
	select {
	case <-done:
	case <-time.After(stopGrace):
	}
	return r.Get(id)
}

// stopQueued stops id if it is still in the queue; ok says whether it was.
func (r *Runner) stopQueued(id string, e *entry) (task.Task, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.dequeueLocked(id) {
		return task.Task{}, false, nil
	}
	t, err := r.updateEntry(e, func(t *task.Task) error {
		t.AddStep("Stopped before it started")
		return t.SetStatus(task.Stopped, r.cfg.Now())
	})
	return t, true, err
}

func (r *Runner) dequeueLocked(id string) bool {
	for kind, q := range r.queue {
		for i, qid := range q {
			if qid == id {
				r.queue[kind] = append(q[:i:i], q[i+1:]...)
				return true
			}
		}
	}
	return false
}

// Retry runs a finished task again from the start (a chat task in a
// fresh conversation: its model does not see the earlier try).
func (r *Runner) Retry(id string) (task.Task, error) {
	return r.requeue(id, func(t *task.Task) error {
		if err := t.SetStatus(task.Queued, r.cfg.Now()); err != nil {
			return err
		}
		t.Note = ""
		t.Steps = []string{}
		t.Resume = nil
		return nil
	})
}

// Resume carries an interrupted, failed or stopped chat task on from where
// it stopped: its chat continues with the whole transcript and a notice of
// what happened. Its steps, output and spend carry on. A task paused at a
// limit is told to carry on now.
func (r *Runner) Resume(id string) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	e.mu.Lock()
	t, wake := e.t.Clone(), e.wake
	e.mu.Unlock()
	if t.Paused != nil && t.Status.Active() && wake != nil {
		select {
		case wake <- struct{}{}:
		default: // already told
		}
		return t, nil
	}
	return r.requeue(id, func(t *task.Task) error {
		if why := t.Resumable(); why != "" {
			return fmt.Errorf("%w: %s", ErrConflict, why)
		}
		res := &task.Resume{From: t.Status, Reason: t.Error, At: r.cfg.Now().UTC()}
		if n := len(t.Steps); n > 0 {
			res.LastStep = t.Steps[n-1]
		}
		if err := t.SetStatus(task.Queued, r.cfg.Now()); err != nil {
			return err
		}
		t.Resume = res
		return nil
	})
}

// requeue moves a finished task back to the queue with fn (which sets its
// status), clearing what its last run came to.
func (r *Runner) requeue(id string, fn func(t *task.Task) error) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	r.mu.Lock()
	t, err := r.updateEntry(e, func(t *task.Task) error {
		if err := fn(t); err != nil {
			return err
		}
		t.Summary, t.Error, t.Current = "", "", ""
		t.Result, t.Ask, t.ExitCode, t.Paused = nil, nil, nil, nil
		t.Notified = false
		return nil
	})
	if err == nil {
		r.queue[t.Kind] = append(r.queue[t.Kind], id)
	}
	r.mu.Unlock()
	if err != nil {
		return t, err
	}
	r.dispatch()
	return t, nil
}

// Delete removes a task that is not working, and its output. Its chat stays.
func (r *Runner) Delete(id string) error {
	e, release, err := r.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	r.mu.Lock()
	defer r.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.deleted {
		return fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	if e.t.Status.Active() {
		return fmt.Errorf("it is %s; stop it before deleting it: %w", e.t.Status.Words(), ErrConflict)
	}
	if err := r.cfg.Store.DeleteTask(id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete task %s: %w", id, err)
	}
	// From here on nothing writes it again: a run dispatched a moment ago
	// finds it gone before it starts, and its command never runs.
	e.deleted = true
	r.dequeueLocked(id)
	delete(r.entries, id)
	if err := r.cfg.Logs.Remove(id); err != nil {
		return fmt.Errorf("delete task %s output: %w", id, err)
	}
	r.cfg.Bus.Publish(event.Event{Type: event.TaskDeleted, ID: id, Prev: e.t.Status})
	return nil
}

// Amend changes a task's record outside its run (whether its chat was
// woken); its status never changes here.
func (r *Runner) Amend(id string, fn func(t *task.Task)) (task.Task, error) {
	return r.update(id, func(t *task.Task) error {
		status := t.Status
		fn(t)
		t.Status = status
		return nil
	})
}

// MarkNotified records that the OS notification for the task's current
// finish is being sent. It reports false when the task has not finished or
// was already marked, so a finish is announced once, across restarts: the
// mark is durable before the notification goes out.
func (r *Runner) MarkNotified(id string) (task.Task, bool, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, false, err
	}
	defer release()
	marked := false
	t, err := r.updateEntry(e, func(t *task.Task) error {
		if !t.Status.Finished() || t.Notified {
			return errNothingToDo
		}
		t.Notified = true
		marked = true
		return nil
	})
	if errors.Is(err, errNothingToDo) {
		err = nil
	}
	return t, marked, err
}

var errNothingToDo = errors.New("nothing to do")

// Answer answers the task's pending question. A second answer, or one for a
// question that is no longer asked, is refused with ErrConflict.
func (r *Runner) Answer(id, askID string, allow bool) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	e.mu.Lock()
	defer e.mu.Unlock()
	if askID == "" {
		return e.t.Clone(), fmt.Errorf("%w: askId is empty", ErrInvalid)
	}
	if e.askID == "" || e.askID != askID || e.t.Status != task.NeedsYou {
		return e.t.Clone(), fmt.Errorf("that question is no longer waiting for an answer (it was answered, withdrawn or timed out): %w", ErrConflict)
	}
	// Either way the task works on: an agent's chat carries on after a
	// denial, a shell command ends there.
	if _, err := r.updateLocked(e, func(t *task.Task) error {
		t.Ask = nil
		t.Current = ""
		if allow {
			t.AddStep("You allowed it")
		} else {
			t.AddStep("You declined it")
		}
		return t.SetStatus(task.Running, r.cfg.Now())
	}); err != nil {
		return e.t.Clone(), err
	}
	e.askID = ""
	e.answer <- allow
	return e.t.Clone(), nil
}

// cacheSize is how many finished tasks nobody holds are kept in memory.
const cacheSize = 256

// acquire returns the task's entry, read from the store into the cache if
// it is not there, and holds it until release is called. The read is made
// under r.mu, so it cannot race a Delete (which holds r.mu too).
func (r *Runner) acquire(id string) (*entry, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	if !ok {
		t, err := r.cfg.Store.Task(id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				err = fmt.Errorf("task %q: %w", id, ErrNotFound)
			}
			return nil, nil, err
		}
		e = &entry{t: t}
		r.entries[id] = e
	}
	e.refs++
	r.tick++
	e.used = r.tick
	return e, func() { r.release(e) }, nil
}

// release lets go of an entry acquire gave, and trims the cache.
func (r *Runner) release(e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unrefLocked(e)
}

// unrefLocked lets go of e (with r.mu held) and trims the cache when it
// has grown to twice its size.
func (r *Runner) unrefLocked(e *entry) {
	e.refs--
	if len(r.entries) > 2*cacheSize {
		r.trimLocked()
	}
}

// trimLocked drops the least recently used finished entries nobody holds,
// down to cacheSize of them. A run holds its entry (see dispatch), so
// nothing that is working is ever dropped.
func (r *Runner) trimLocked() {
	lru.Trim(r.entries, cacheSize, func(e *entry) (bool, int64) {
		if e.refs > 0 {
			return false, 0
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.t.Status.Finished() || e.deleted, e.used
	})
}

// update applies fn to a copy of the task, stores it, keeps it and publishes
// it, in that order. If fn or the store fails, nothing changes.
func (r *Runner) update(id string, fn func(t *task.Task) error) (task.Task, error) {
	e, release, err := r.acquire(id)
	if err != nil {
		return task.Task{}, err
	}
	defer release()
	return r.updateEntry(e, fn)
}

// updateEntry is update for a caller that holds the entry already (and may
// hold r.mu: the lock order is r.mu, then entry.mu).
func (r *Runner) updateEntry(e *entry, fn func(t *task.Task) error) (task.Task, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.updateLocked(e, fn)
}

func (r *Runner) updateLocked(e *entry, fn func(t *task.Task) error) (task.Task, error) {
	ts, errs := r.updateAllLocked(change{e, fn})
	return ts[0], errs[0]
}

// change is one task's part of a write (updateAllLocked).
type change struct {
	e  *entry
	fn func(t *task.Task) error
}

// updateAllLocked is update for several tasks at once, each entry's lock
// held by the caller: the changes fn accepts are stored in one write, then
// kept and published in order. A change fn refuses (or of a deleted task)
// is left out; the others still land. It answers each task as it is now
// and each change's error.
func (r *Runner) updateAllLocked(cs ...change) ([]task.Task, []error) {
	out, errs := make([]task.Task, len(cs)), make([]error, len(cs))
	next := make([]task.Task, 0, len(cs))
	for i, c := range cs {
		if c.e.deleted {
			errs[i] = fmt.Errorf("task %q: %w", c.e.t.ID, ErrNotFound)
			continue
		}
		n := c.e.t.Clone()
		if err := c.fn(&n); err != nil {
			errs[i] = err
			continue
		}
		n.Rev = c.e.t.Rev + 1
		next = append(next, n)
	}
	var err error
	switch len(next) {
	case 0:
	case 1:
		if err = r.cfg.Store.PutTask(next[0]); err != nil {
			err = fmt.Errorf("save task %s: %w", next[0].ID, err)
		}
	default:
		err = r.cfg.Store.PutTasks(next)
	}
	for i, c := range cs {
		if errs[i] == nil && err != nil {
			errs[i] = err
		}
		if errs[i] != nil {
			out[i] = c.e.t.Clone()
			continue
		}
		prev := c.e.t.Status
		c.e.t, next = next[0], next[1:]
		r.publish(prev, c.e.t)
		out[i] = c.e.t.Clone()
	}
	return out, errs
}

// publish tells Observe and the bus of t, which was prev ("" for a new
// task).
func (r *Runner) publish(prev task.Status, t task.Task) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(prev, t.Clone())
	}
	c := t.Clone()
	r.cfg.Bus.Publish(event.Event{Type: event.TaskChanged, Task: &c, Prev: prev})
}

// dispatch starts queued tasks while their kind has free slots.
func (r *Runner) dispatch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.closed {
		return
	}
	for _, kind := range []task.Kind{task.Background, task.Helper} {
		for r.active[kind] < r.limitOf(kind) {
			n := r.nextLocked(kind)
			if n == nil {
				break
			}
			r.active[kind]++
			go r.run(n.ctx, n.e, n.h, nil)
		}
	}
}

// limitOf is how many tasks of kind may work at once.
func (r *Runner) limitOf(kind task.Kind) int {
	if kind == task.Helper {
		return r.limits.Helper
	}
	return r.limits.Background
}

// queuedRun is a queued task taken for a slot, with its run.
type queuedRun struct {
	e   *entry
	h   *activeRun
	ctx context.Context
}

// nextLocked takes the first queued task of kind that can still start
// and gives it a run holding a slot (r.mu held; the caller counts the slot
// and starts the run). Nil: none is waiting.
func (r *Runner) nextLocked(kind task.Kind) *queuedRun {
	for len(r.queue[kind]) > 0 {
		id := r.queue[kind][0]
		r.queue[kind] = r.queue[kind][1:]
		e, ok := r.entries[id]
		if !ok {
			continue
		}
		ctx, cancel := context.WithCancelCause(r.ctx)
		h := &activeRun{cancel: cancel, done: make(chan struct{}), kind: kind, slot: true}
		e.mu.Lock()
		if e.deleted || e.t.Status != task.Queued {
			e.mu.Unlock()
			cancel(nil)
			continue
		}
		e.run = h
		e.mu.Unlock()
		e.refs++ // the run holds it until its end (see run)
		r.wg.Add(1)
		return &queuedRun{e: e, h: h, ctx: ctx}
	}
	return nil
}

// passSlot ends h's hold on its slot as its work ends. When a task of its
// kind is waiting, the slot goes straight to it, so that task's start can
// be stored with h's end in one write (see finish); otherwise the slot is
// freed for dispatch.
func (r *Runner) passSlot(h *activeRun) *queuedRun {
	r.mu.Lock()
	if h.slot && r.started && !r.closed && r.active[h.kind] <= r.limitOf(h.kind) {
		if n := r.nextLocked(h.kind); n != nil {
			h.slot = false // the count stays: the slot is n's now
			r.mu.Unlock()
			return n
		}
	}
	r.mu.Unlock()
	r.releaseSlot(h)
	return nil
}

// id is the task's id, which never changes.
func (e *entry) id() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.t.ID
}
