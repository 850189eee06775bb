// Package handoff sends work away from a chat: background tasks (the
// person's, or the assistant's start_background_task) and delegate's helpers
// side by side. A task is a chat of its own (origin task) run by the chat
// engine inside the task runner's slot; this package starts them with the
// powers of the chat they came from and never more (mode, folder, taint,
// budget), tells that chat of every status change, brings results back,
// and wakes the assistant when it asked for the work.
package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/pref"
	"conch/backend/provider"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/worktree"
)

// Errors the surfaces map to HTTP statuses, shared with the runner.
var (
	ErrInvalid = taskrun.ErrInvalid
)

// Config wires a Service.
type Config struct {
	Chats     *chat.Manager
	Providers provider.Registry
	// Spending is the monthly budget and the prices (nil: no budget).
	Spending chat.Spending
	// Preferences are read at each use (limitFallback).
	Preferences func() pref.Preferences
	// Worktrees is where helpers' worktrees go (<home>/worktrees).
	Worktrees string
	// InfoTimeout bounds asking a provider whether it is ready (default 5 s).
	InfoTimeout time.Duration
}

// Service starts tasks from chats and follows them. Create it, give the
// runner its Observe and itself as the Conversations executor, then Start.
type Service struct {
	cfg   Config
	tasks *taskrun.Runner

	mu      sync.Mutex // guards the fields below
	queue   []task.Task
	last    map[string]task.Status
	waiters map[string][]chan task.Task
	started bool
	// listed and listedAt keep the providers a prompt listed.
	listed   []engine
	listedAt time.Time

	signal chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

// New returns a service; Start it with the runner.
func New(cfg Config) *Service {
	if cfg.InfoTimeout <= 0 {
		cfg.InfoTimeout = 5 * time.Second
	}
	if cfg.Preferences == nil {
		cfg.Preferences = pref.Defaults
	}
	return &Service{
		cfg: cfg, last: map[string]task.Status{}, waiters: map[string][]chan task.Task{},
		signal: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// Start follows the runner's tasks; it delivers results that a Conch that
// stopped still owed to their chats. Changes the runner made while healing
// (running → interrupted) are already queued and are told as any other.
func (s *Service) Start(tasks *taskrun.Runner) {
	// List before taking s.mu: the runner calls Observe (which takes s.mu)
	// with a task's lock held, and List takes those locks.
	all, _ := tasks.List()
	s.inspectLeftWorktrees(tasks, all)
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return
	}
	s.started = true
	s.tasks = tasks
	queued := map[string]bool{}
	for _, t := range s.queue {
		queued[t.ID] = true
	}
	var owed []task.Task
	for _, t := range all {
		if queued[t.ID] {
			continue
		}
		s.last[t.ID] = t.Status
		if t.Status.Finished() && t.Wake == task.WakePending && t.ParentConversationID != "" {
			owed = append(owed, t)
		}
	}
	s.mu.Unlock()
	for _, t := range owed {
		s.wake(t)
	}
	go s.loop()
	s.signalLoop()
}

// inspectLeftWorktrees looks again at the worktrees of helpers that ended
// without settling them (a crash): one that holds work is kept and its work
// counted, so it shows on the card and is never removed without the
// person's say; an empty one is removed.
func (s *Service) inspectLeftWorktrees(tasks *taskrun.Runner, all []task.Task) {
	for _, t := range all {
		w := t.Worktree
		if !t.Status.Finished() || w == nil || w.Kept || w.Path == "" {
			continue
		}
		if _, err := os.Stat(w.Path); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		rec, err := worktree.FromRecord(*w).Settle(ctx)
		cancel()
		_, _ = tasks.Amend(t.ID, func(t *task.Task) {
			t.Worktree = &rec
			if err != nil {
				t.AddStep("Worktree: " + err.Error())
			}
		})
	}
}

func (s *Service) signalLoop() {
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// Stop ends the follower; safe before Start and twice.
func (s *Service) Stop() {
	s.mu.Lock()
	started := s.started
	s.started = false
	s.mu.Unlock()
	if !started {
		return
	}
	close(s.stop)
	<-s.done
}

// Observe is the runner's hook: it queues the change for the follower and
// returns at once.
func (s *Service) Observe(t task.Task) {
	if t.ConversationID == "" || t.ParentConversationID == "" {
		return
	}
	s.mu.Lock()
	s.queue = append(s.queue, t)
	s.mu.Unlock()
	s.signalLoop()
}

func (s *Service) loop() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		case <-s.signal:
		}
		for {
			s.mu.Lock()
			q := s.queue
			s.queue = nil
			s.mu.Unlock()
			if len(q) == 0 {
				break
			}
			for _, t := range q {
				s.follow(t)
			}
		}
	}
}

// follow tells the parent chat of a status change and, on a finish, brings
// the result and the taint back and releases whoever waits for it.
func (s *Service) follow(t task.Task) {
	s.mu.Lock()
	prev, seen := s.last[t.ID]
	s.last[t.ID] = t.Status
	s.mu.Unlock()
	if seen && prev == t.Status {
		return
	}
	ev := update(t)
	_ = s.cfg.Chats.PostTaskEvent(t.ParentConversationID, ev)
	if !t.Status.Finished() {
		return
	}
	s.flowTaint(t)
	if t.Kind == task.Background {
		final := ev
		final.Final = true
		final.Summary = t.Summary
		_ = s.cfg.Chats.PostTaskEvent(t.ParentConversationID, final)
		if t.Wake == task.WakePending {
			s.wake(t)
		}
	}
	s.mu.Lock()
	ws := s.waiters[t.ID]
	delete(s.waiters, t.ID)
	s.mu.Unlock()
	for _, w := range ws {
		w <- t
	}
}

// update is the task event a parent chat records.
func update(t task.Task) conversation.TaskUpdate {
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
func (s *Service) flowTaint(t task.Task) {
	c, err := s.cfg.Chats.Snapshot(t.ConversationID)
	if err != nil || !c.Tainted {
		return
	}
	what := "background task"
	if t.Kind == task.Helper {
		what = "helper"
	}
	_ = s.cfg.Chats.Taint(t.ParentConversationID, fmt.Sprintf("the %s %q read content from outside", what, t.Title))
}

// wake gives the parent's assistant its turn on the result, once.
func (s *Service) wake(t task.Task) {
	if err := s.cfg.Chats.Wake(t.ParentConversationID); err != nil {
		return // Conch is closing: the wake stays pending for the next start
	}
	_, _ = s.tasks.Amend(t.ID, func(t *task.Task) { t.Wake = task.WakeSent })
}

// waitFor returns a channel that receives the task once it finishes.
// Register before the task can finish (before Insert).
func (s *Service) waitFor(id string) <-chan task.Task {
	ch := make(chan task.Task, 1)
	s.mu.Lock()
	s.waiters[id] = append(s.waiters[id], ch)
	s.mu.Unlock()
	return ch
}

func (s *Service) forget(id string) {
	s.mu.Lock()
	delete(s.waiters, id)
	s.mu.Unlock()
}

// engine is a provider as a task sees it now.
type engine struct {
	id   string
	info provider.Info
}

func (e engine) name() string {
	if e.info.Name != "" {
		return e.info.Name
	}
	return e.id
}

// engines asks every connected provider how it stands, in parallel.
func (s *Service) engines(ctx context.Context) []engine {
	ids := s.cfg.Providers.IDs()
	out := make([]engine, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = engine{id: id, info: s.infoOf(ctx, id)}
		}()
	}
	wg.Wait()
	return out
}

// infoOf is the provider's Info, or not ready when it does not answer.
func (s *Service) infoOf(ctx context.Context, id string) provider.Info {
	p, ok := s.cfg.Providers.Provider(id)
	if !ok {
		return provider.Info{ID: id, Reason: "it is not connected"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.InfoTimeout)
	defer cancel()
	got := make(chan provider.Info, 1)
	go func() { got <- p.Info(ctx) }()
	select {
	case info := <-got:
		return info
	case <-ctx.Done():
		return provider.Info{ID: id, Reason: fmt.Sprintf("%s did not answer within %s", id, s.cfg.InfoTimeout)}
	}
}

// pick resolves a provider named by id or name among the engines; empty
// means the chat's own. Only a provider that is ready and can ask takes
// work; the error lists the ones that can.
func pick(engines []engine, named, own string, notReadyOK bool) (engine, error) {
	want := strings.TrimSpace(named)
	if want == "" {
		want = own
	}
	var usable []string
	var found *engine
	for i, e := range engines {
		if e.info.Ready && e.info.CanAsk {
			usable = append(usable, fmt.Sprintf("%s (%s)", e.id, e.name()))
		}
		if strings.EqualFold(e.id, want) || (e.info.Name != "" && strings.EqualFold(e.info.Name, want)) {
			found = &engines[i]
		}
	}
	who := "none is ready now"
	if len(usable) > 0 {
		sort.Strings(usable)
		who = strings.Join(usable, ", ")
	}
	switch {
	case found == nil:
		return engine{}, fmt.Errorf("no connected provider is called %q. Providers that can take work: %s", want, who)
	case !found.info.CanAsk:
		return engine{}, fmt.Errorf("%s cannot ask before it acts, so it is never handed work. Providers that can take work: %s", found.name(), who)
	case !found.info.Ready && !notReadyOK:
		reason := found.info.Reason
		if reason == "" {
			reason = "it gave no reason"
		}
		return engine{}, fmt.Errorf("%s is not ready: %s. Providers that can take work: %s", found.name(), reason, who)
	}
	return *found, nil
}

// modelFor chooses a part's model: fast (the default: the provider's small
// model), same (the chat's model on its own provider, the provider's
// default elsewhere) or an id from the provider's list. The chat's model
// never goes to another provider.
func modelFor(e engine, choice string, chatProvider, chatModel string) (string, error) {
	models := e.info.Models
	switch strings.TrimSpace(choice) {
	case "", "fast":
		if models.Fast != "" {
			return models.Fast, nil
		}
		return models.Default, nil
	case "same":
		if e.id == chatProvider && chatModel != "" {
			return chatModel, nil
		}
		return models.Default, nil
	}
	for _, m := range models.List {
		if m == choice {
			return m, nil
		}
	}
	list := "it lists none"
	if len(models.List) > 0 {
		list = "it has " + strings.Join(models.List, ", ")
	}
	return "", fmt.Errorf("%s has no model %q (%s); use fast, same or one of its models", e.name(), choice, list)
}

// spec is a task to start from a chat.
type spec struct {
	kind         task.Kind
	title, text  string
	engine       engine
	model        string
	mode         task.Mode
	wake         task.Wake
	group        string
	part, parts  int
	worktree     bool
	parentEngine string
}

// start makes the task's chat and hands the task to the runner. A provider
// that is not ready fails the task at once with its reason.
func (s *Service) start(ctx context.Context, parent conversation.Conversation, sp spec) (task.Task, error) {
	return s.startWithID(ctx, uuid.NewString(), parent, sp)
}

func (s *Service) startWithID(ctx context.Context, id string, parent conversation.Conversation, sp spec) (task.Task, error) {
	t := task.Task{
		ID: id, Kind: sp.kind, Title: strings.TrimSpace(sp.title), Text: sp.text,
		ParentConversationID: parent.ID, GroupID: sp.group, Part: sp.part, Parts: sp.parts,
		Provider: sp.engine.id, Model: sp.model, Mode: sp.mode, Cwd: parent.Cwd, Wake: sp.wake,
	}
	if t.Title == "" {
		t.Title = task.TitleFrom(sp.text)
	}
	if sp.engine.id != sp.parentEngine {
		t.By = sp.engine.name()
	}
	if sp.worktree {
		if err := s.addWorktree(ctx, &t, parent.Cwd); err != nil {
			t.Status, t.Error = task.Failed, err.Error()
		}
	}
	c, err := s.cfg.Chats.Create(chat.CreateRequest{
		Title: t.Title, Provider: t.Provider, Model: t.Model, Mode: string(t.Mode), Cwd: t.Cwd,
		Limit: parent.Limit, Tainted: parent.Tainted,
		Origin: conversation.Origin{Kind: conversation.FromTask, TaskID: id, ParentID: parent.ID},
	})
	if err != nil {
		return task.Task{}, fmt.Errorf("start task: %w", err)
	}
	t.ConversationID = c.ID
	if t.Status != task.Failed && !sp.engine.info.Ready {
		t.Status, t.Error = task.Failed, sp.engine.name()+" is not ready: "+sp.engine.info.Reason
	}
	return s.tasks.Insert(t)
}

// Background starts the person's background task from a chat
// (POST /api/tasks with a conversationId): in the chat's mode, provider
// and model unless narrower or another provider is named. Nobody is woken:
// its result is posted in the chat.
func (s *Service) Background(ctx context.Context, req taskrun.CreateRequest) (task.Task, error) {
	parent, err := s.cfg.Chats.Snapshot(req.ConversationID)
	if err != nil {
		return task.Task{}, err
	}
	if parent.Origin.Kind == conversation.FromTask {
		return task.Task{}, fmt.Errorf("%w: a task's chat cannot send work away; send it from the chat the task came from", ErrInvalid)
	}
	text := strings.TrimSpace(req.Text)
	if text == "" {
		return task.Task{}, fmt.Errorf("%w: text is empty: write what the task should do", ErrInvalid)
	}
	if len(req.Text) > 64<<10 {
		return task.Task{}, fmt.Errorf("%w: text is longer than %d bytes", ErrInvalid, 64<<10)
	}
	if len(strings.TrimSpace(req.Title)) > 200 {
		return task.Task{}, fmt.Errorf("%w: title is longer than 200 bytes", ErrInvalid)
	}
	o := req.Options
	if o.Check != "" {
		return task.Task{}, fmt.Errorf("%w: check commands are not supported yet", ErrInvalid)
	}
	if o.Cwd != "" && filepath.Clean(o.Cwd) != parent.Cwd {
		return task.Task{}, fmt.Errorf("%w: a chat's task works in the chat's folder (%s)", ErrInvalid, parent.Cwd)
	}
	mode, err := narrower(parent.Mode, o.Mode)
	if err != nil {
		return task.Task{}, err
	}
	sp, err := s.specFor(ctx, parent, o.Provider, o.Model, true)
	if err != nil {
		return task.Task{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	sp.kind, sp.title, sp.text, sp.mode, sp.wake = task.Background, req.Title, req.Text, mode, task.WakeNone
	return s.start(ctx, parent, sp)
}

// narrower is the mode a task asked for, refused when wider than its chat's.
func narrower(chatMode task.Mode, asked string) (task.Mode, error) {
	if asked == "" {
		return chatMode, nil
	}
	m := task.Mode(asked)
	if !m.Valid() {
		return "", fmt.Errorf("%w: unknown mode %q (plan, ask, edits or auto)", ErrInvalid, asked)
	}
	if m.Wider(chatMode) {
		return "", fmt.Errorf("%w: a task cannot run in %s mode when its chat is in %s mode", ErrInvalid, m, chatMode)
	}
	return m, nil
}

// specFor resolves the provider and model of a task sent from parent:
// named ones, else the chat's own. A provider that is not ready is taken
// (the task then fails at once with its reason) only when notReadyOK.
func (s *Service) specFor(ctx context.Context, parent conversation.Conversation, named, model string, notReadyOK bool) (spec, error) {
	if named == "" && parent.Provider == "" {
		return spec{}, errors.New("this chat has no provider yet; pick one first")
	}
	e, err := pick(s.engines(ctx), named, parent.Provider, notReadyOK)
	if err != nil {
		return spec{}, err
	}
	choice := model
	if choice == "" {
		choice = "same"
	}
	m, err := modelFor(e, choice, parent.Provider, parent.Model)
	if err != nil {
		return spec{}, err
	}
	return spec{engine: e, model: m, parentEngine: parent.Provider}, nil
}
