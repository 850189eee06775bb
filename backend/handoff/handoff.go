// Package handoff sends work away from a chat: the person's background
// tasks, the assistant's start_background_task, and delegate's helpers side
// by side. It makes each task a chat of its own (origin task) with the
// powers of the chat it came from and never more (mode, folder, taint,
// budget), and hands it to the runner; chattask runs it and brings its
// result back.
package handoff

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"conch/backend/chat"
	"conch/backend/chattask"
	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/pref"
	"conch/backend/startstop"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/tool"
	"conch/backend/worktree"
)

// ErrInvalid is returned for a request to hand work off that can never
// succeed as written (the runner's sentinel: one code for both).
var ErrInvalid = taskrun.ErrInvalid

// Config wires a Service.
type Config struct {
	Chats   *chat.Manager
	Tasks   *taskrun.Runner
	Follow  *chattask.Follower
	Engines engine.Lookup
	// Spending is the monthly budget and the prices (nil: no budget).
	Spending chat.Spending
	// Worktrees is where helpers' worktrees go (<home>/worktrees).
	Worktrees string
	// Preferences are read at each use (the default job cap); nil reads
	// none.
	Preferences func() pref.Preferences
	// Routines gives the person's chats schedule_routine (nil: not
	// offered).
	Routines Scheduler
	// Hosts take chats' tasks to other computers (nil: none).
	Hosts Hosts
	// Lender, on a host's runner, keeps the API-model providers a
	// desktop lends with the tasks it sends (*registry.Registry).
	Lender Lender
}

// Lender keeps lent providers for the tasks they were lent for.
type Lender interface {
	Lend(owner string, rec store.ProviderConfig, key string) error
	Unlend(owner string)
}

// Scheduler makes routines from a chat (*routine.Service).
type Scheduler interface {
	Tool(c conversation.Conversation) tool.Tool
}

// Service starts tasks from chats. Offer it to the chat engine
// (chat.Manager.Offer) so the person's chats get its tools.
type Service struct {
	cfg Config

	mu sync.Mutex // guards the fields below
	// listed and listedAt keep the providers a prompt listed.
	listed   []engine.Engine
	listedAt time.Time
	// life says whether work may be handed off: from Start until Stop.
	life startstop.State
	// sent makes StartSent's look for an id and its taking of it one step.
	sent sync.Mutex
}

// New returns the service; it hands nothing off until Start.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// Start lets work be handed off. Start it after the runner and the
// follower: a hand-off needs both.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.life.Start(ctx); err != nil {
		return fmt.Errorf("start hand-off: %w", err)
	}
	return nil
}

// Stop refuses hand-offs from now on (Conch is closing), before they make
// a chat; those already started are the runner's to stop. Safe twice and
// before Start.
func (s *Service) Stop() { s.life.Stop(&s.mu, nil) }

// errClosed is a hand-off asked for when Conch is not handing work off.
var errClosed = errors.New("work is not being handed off now (Conch is starting or closing)")

// open refuses a hand-off outside Start and Stop.
func (s *Service) open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.life.Open() {
		return errClosed
	}
	return nil
}

// spec is a task to start from a chat.
type spec struct {
	kind         task.Kind
	title, text  string
	engine       engine.Engine
	model        string
	mode         task.Mode
	wake         task.Wake
	group        string
	part, parts  int
	worktree     bool
	parentEngine string
	// check must pass before the task is done; checkRetries are the
	// extra turns its model gets to make it pass.
	check        string
	checkRetries int
	// estimate is what the part is guessed to cost to start; jobCap what
	// its group may spend together (0: no cap).
	estimate float64
	jobCap   float64
	// routine is the routine whose run this is: its chat's origin is
	// the routine, with no chat above it.
	routine string
	// host is the host the task runs on (its engine is a CLI there), and
	// cwd its folder there ("" for the home).
	host, cwd string
}

// start makes the task's chat and hands the task to the runner. A provider
// that is not ready fails the task at once with its reason.
func (s *Service) start(ctx context.Context, parent conversation.Conversation, sp spec) (task.Task, error) {
	return s.startWithID(ctx, store.NewID(), parent, sp)
}

func (s *Service) startWithID(ctx context.Context, id string, parent conversation.Conversation, sp spec) (task.Task, error) {
	if err := s.open(); err != nil {
		return task.Task{}, err
	}
	t := task.Task{
		ID: id, Kind: sp.kind, Title: strings.TrimSpace(sp.title), Text: sp.text,
		ParentConversationID: parent.ID, GroupID: sp.group, Part: sp.part, Parts: sp.parts,
		Provider: sp.engine.ID, Model: sp.model, Mode: sp.mode, Cwd: parent.Cwd, Host: sp.host, Wake: sp.wake,
		Check: sp.check, CheckRetries: sp.checkRetries,
		Estimate: sp.estimate, Cap: sp.jobCap,
	}
	if t.Title == "" {
		t.Title = task.TitleFrom(sp.text)
	}
	origin := conversation.Origin{Kind: conversation.FromTask, TaskID: id, ParentID: parent.ID}
	if sp.routine != "" {
		t.RoutineID = sp.routine
		origin = conversation.Origin{Kind: conversation.FromRoutine, TaskID: id, RoutineID: sp.routine}
	}
	if err := taskrun.ValidateText(t.Text, t.Title); err != nil {
		return task.Task{}, err
	}
	if err := checkFits(t.Check, t.Mode); err != nil {
		return task.Task{}, err
	}
	if sp.engine.ID != sp.parentEngine {
		t.By = sp.engine.Name()
	}
	switch {
	case sp.worktree && sp.host != "":
		t.WantsWorktree = true // made there, by the host's runner
	case sp.worktree:
		if err := s.addWorktree(ctx, &t, parent.Cwd); err != nil {
			t.Status, t.Error = task.Failed, err.Error()
		}
	}
	if sp.host != "" {
		t.Cwd = sp.cwd
	}
	c, err := s.cfg.Chats.Create(chat.CreateRequest{
		Title: t.Title, Provider: t.Provider, Model: t.Model, Mode: string(t.Mode), Cwd: t.Cwd, Host: sp.host,
		Limit: parent.Limit, Tainted: parent.Tainted,
		Origin: origin,
		JobID:  jobOf(sp), JobCap: sp.jobCap,
	})
	if err != nil {
		return task.Task{}, fmt.Errorf("start task: %w", err)
	}
	t.ConversationID, t.Cwd = c.ID, c.Cwd
	if t.Status != task.Failed && !sp.engine.Info.Ready {
		t.Status, t.Error = task.Failed, sp.engine.Name()+" is not ready: "+sp.engine.Info.Reason
	}
	return s.cfg.Tasks.Insert(t)
}

// jobOf is the job a helper's chat spends in: its group, when the group
// has a cap.
func jobOf(sp spec) string {
	if sp.jobCap > 0 {
		return sp.group
	}
	return ""
}

// checkFits refuses a check a task could never run: too long, or in plan
// mode, which runs no commands.
func checkFits(check string, mode task.Mode) error {
	if _, err := taskrun.ValidateRetries(check, nil); err != nil {
		return err
	}
	if check != "" && mode == task.Plan {
		return fmt.Errorf("%w: a check runs a command, which plan mode refuses; leave the check out or use a wider mode", ErrInvalid)
	}
	return nil
}

// addWorktree gives t its own worktree of the repository holding dir; a
// folder outside git is shared, and the card says so.
func (s *Service) addWorktree(ctx context.Context, t *task.Task, dir string) error {
	tree, err := worktree.Add(ctx, dir, s.cfg.Worktrees, t.ID)
	if errors.Is(err, worktree.ErrNotRepo) {
		t.Note = "Not in a git repository, so it shares the folder."
		return nil
	}
	if err != nil {
		return fmt.Errorf("Could not make its worktree: %w", err)
	}
	t.Cwd = tree.Dir
	t.Worktree = &task.Worktree{Path: tree.Path, Branch: tree.Branch, Base: tree.Base}
	return nil
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
	if parent.Origin.IsRun() {
		return task.Task{}, fmt.Errorf("%w: a task's chat cannot send work away; send it from the chat the task came from", ErrInvalid)
	}
	if err := taskrun.ValidateText(req.Text, req.Title); err != nil {
		return task.Task{}, err
	}
	o := req.Options
	retries, err := taskrun.ValidateRetries(o.Check, o.CheckRetries)
	if err != nil {
		return task.Task{}, err
	}
	if parent.Host != "" && (o.Host == "" || o.Host == parent.Host) {
		// A chat on a host sends its work there, in its folder, as a chat
		// here does here.
		if o.Cwd != "" && path.Clean(o.Cwd) != parent.Cwd {
			return task.Task{}, fmt.Errorf("%w: a chat's task works in the chat's folder (%s:%s)", ErrInvalid, parent.Host, parent.Cwd)
		}
		o.Host, o.Cwd = parent.Host, parent.Cwd
	}
	if o.Sent() {
		return task.Task{}, fmt.Errorf("%w: id, tainted and limit are Conch's to give a task sent to a host", ErrInvalid)
	}
	if err := checkHostCwd(parent, o); err != nil {
		return task.Task{}, err
	}
	mode, err := narrower(parent.Mode, o.Mode)
	if err != nil {
		return task.Task{}, err
	}
	var sp spec
	if o.Host != "" {
		err = s.onHost(ctx, parent, o, &sp)
	} else if sp, err = s.specFor(ctx, parent, o.Provider, o.Model, true); err != nil {
		err = fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err != nil {
		return task.Task{}, err
	}
	sp.kind, sp.title, sp.text, sp.mode, sp.wake = task.Background, req.Title, req.Text, mode, task.WakeNone
	sp.check, sp.checkRetries = strings.TrimSpace(o.Check), retries
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
	e, err := engine.Pick(s.cfg.Engines.All(ctx), named, parent.Provider, notReadyOK)
	if err != nil {
		return spec{}, err
	}
	choice := model
	if choice == "" {
		choice = "same"
	}
	m, err := engine.ModelFor(e, choice, parent.Provider, parent.Model)
	if err != nil {
		return spec{}, err
	}
	return spec{engine: e, model: m, parentEngine: parent.Provider}, nil
}
