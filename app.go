package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/desktop"
	"conch/backend/doctor"
	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/handoff"
	"conch/backend/notify"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/procmark"
	"conch/backend/provider/registry"
	"conch/backend/provider/shell"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/tool"
)

// App wires Conch's services and is the facade the Wails window binds: its
// exported methods are the bindings, each a one-liner into a service.
type App struct {
	home  string
	store *store.Bolt
	bus   *event.Bus
	logs  *output.Logs
	tasks *taskrun.Runner
	chats *chat.Manager
	// handoff starts tasks from chats and follows them back.
	handoff *handoff.Service
	shell   *shell.Shell
	alerts  *notify.Service

	// providers are the chats' providers (configured, from env vars,
	// Ollama, CLIs on PATH); providersProblem is why some configured one
	// could not be read, if so.
	providers        *registry.Registry
	providersProblem string

	notifier      notify.Notifier
	notifyProblem string // why D-Bus notifications are not used, if so

	mu       sync.Mutex
	tray     doctor.Feature
	shortcut doctor.Feature
	onOpen   func() // brings the window forward (desktop only)
}

// surface says which front Conch runs behind.
type surface int

const (
	served surface = iota
	windowed
)

// openApp opens the home folder's state and starts the task runner, healing
// what a Conch that died left behind.
func openApp(ctx context.Context, home string, on surface) (*App, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("make home %s: %w", home, err)
	}
	dbPath := filepath.Join(home, "conch.db")
	st, err := store.Open(dbPath)
	if errors.Is(err, store.ErrInUse) {
		return nil, inUse(home, dbPath)
	}
	if err != nil {
		return nil, err
	}
	// Every process a task or chat starts carries this home's mark, and
	// healing ends only what carries it: never a copy of this home's.
	mark, err := procmark.HomeMark(home, dbPath)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	userHome, err := os.UserHomeDir()
	if err != nil {
		userHome = home
	}
	a := &App{
		home: home, store: st, bus: event.NewBus(), logs: output.New(filepath.Join(home, "tasks")),
		shell: &shell.Shell{Home: userHome},
	}
	if on == served {
		a.tray = doctor.Feature{Detail: "conch serve has no tray; the desktop app shows one"}
		a.shortcut = doctor.Feature{Detail: "conch serve has no global shortcut; the desktop app has Ctrl+Shift+Enter"}
	}
	// A stored provider that cannot be read is left out and told by the
	// doctor; the rest still work.
	a.providers, err = registry.New(ctx, registry.Config{Store: st})
	if err != nil {
		a.providersProblem = err.Error()
	}
	// Prices and the monthly budget come from the preferences as they are
	// at each call.
	spending := budget.New(st, a.preferences)
	// The chat engine offers the hand-off tools, which start tasks in chats
	// of their own: the closures break the cycle.
	var h *handoff.Service
	a.chats = chat.New(chat.Config{
		Store:     st,
		Bus:       a.bus,
		Providers: a.providers,
		Logs:      output.New(filepath.Join(home, "chats")),
		Home:      userHome,
		Spending:  spending,
		Extra:     func(c conversation.Conversation) []tool.Tool { return h.Tools(c) },
		Prompt:    func(ctx context.Context, c conversation.Conversation) string { return h.Prompt(ctx, c) },
		HomeMark:  mark,
		Log:       log,
	})
	h = handoff.New(handoff.Config{
		Chats: a.chats, Providers: a.providers, Spending: spending,
		Preferences: a.preferences, Worktrees: filepath.Join(home, "worktrees"),
	})
	a.handoff = h
	a.tasks = taskrun.New(taskrun.Config{
		Store:         st,
		Bus:           a.bus,
		Logs:          a.logs,
		Home:          userHome,
		Executors:     map[string]taskrun.Executor{"shell": a.shell},
		Conversations: h,
		Observe:       h.Observe,
		HomeMark:      mark,
		Log:           log,
	})
	// The notifier calls back into the service (clicks, buttons), which
	// sends through the notifier: the closure breaks the cycle.
	var alerts *notify.Service
	notifier, err := notify.Open(func(tag, action string) { alerts.Action(tag, action) })
	if err != nil {
		a.notifyProblem = err.Error()
	}
	alerts = notify.NewService(notify.Config{
		Tasks: a.tasks, Bus: a.bus, Notifier: notifier,
		Topics: a.topics,
		Open:   a.open,
	})
	a.notifier, a.alerts = notifier, alerts
	a.alerts.Start(ctx)
	if err := a.tasks.Start(ctx); err != nil {
		a.alerts.Stop()
		_ = notifier.Close()
		_ = st.Close()
		return nil, err
	}
	if err := a.chats.Start(ctx); err != nil {
		a.tasks.Stop()
		a.alerts.Stop()
		_ = notifier.Close()
		_ = st.Close()
		return nil, err
	}
	a.handoff.Start(a.tasks)
	return a, nil
}

// inUse says which process has the home open, so the person knows what to
// stop.
func inUse(home, dbPath string) error {
	pid, ok := store.Holder(dbPath)
	if !ok {
		return fmt.Errorf("%s is in use by another process (is another Conch running?); stop it, or use another --home", home)
	}
	who := fmt.Sprintf("process %d", pid)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(b) > 0 {
		who += " (" + strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")) + ")"
	}
	return fmt.Errorf("%s is in use by another Conch, %s; stop it, or use another --home", home, who)
}

// close stops every run (they become interrupted) and closes the store;
// safe twice.
func (a *App) close() error {
	// Tasks first: their chats' turns end with them, and they are marked
	// interrupted rather than failed.
	a.tasks.Stop()
	a.chats.Stop()
	a.handoff.Stop()
	a.alerts.Stop()
	_ = a.notifier.Close()
	a.bus.Close()
	return a.store.Close()
}

func (a *App) topics() pref.Topics { return a.preferences().Notifications }

// preferences are the stored preferences, or the defaults when they cannot
// be read.
func (a *App) preferences() pref.Preferences {
	p, err := a.store.Preferences()
	if err != nil {
		return pref.Defaults()
	}
	return p
}

// open shows the chat a task came from: the window comes forward and the
// page follows the app.open event.
func (a *App) open(taskID string) {
	a.mu.Lock()
	bringForward := a.onOpen
	a.mu.Unlock()
	if bringForward != nil {
		bringForward()
	}
	a.bus.Publish(event.Event{Type: event.Open, ID: taskID})
}

// chatQuestions lists the chats waiting on the person, for the tray menu.
func (a *App) chatQuestions() []desktop.Question {
	var items []desktop.Question
	for _, c := range a.chats.List() {
		if c.Ask == nil {
			continue
		}
		title := c.Title
		if title == "" {
			title = "New chat"
		}
		items = append(items, desktop.Question{ChatID: c.ID, Title: title})
	}
	return items
}

// setDesktop records how the window's tray and shortcut came up, and how to
// bring the window forward.
func (a *App) setDesktop(tray, shortcut doctor.Feature, bringForward func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tray, a.shortcut, a.onOpen = tray, shortcut, bringForward
}

// Doctor says what is wrong and where to fix it.
func (a *App) Doctor() doctor.Report {
	tasks, _ := a.tasks.List()
	ready, reason := a.shell.Ready()
	st := doctor.Store{Path: a.store.Path(), Schema: store.SchemaVersion}
	if fi, err := os.Stat(a.store.Path()); err == nil {
		st.Size = fi.Size()
	} else {
		st.Err = err
	}
	service := ""
	if a.notifier != nil {
		service = a.notifier.Describe()
	}
	a.mu.Lock()
	tray, shortcut := a.tray, a.shortcut
	a.mu.Unlock()
	return doctor.Run(doctor.Input{
		Tasks:     tasks,
		Providers: doctorProviders(ready, reason, a.providers, a.providersProblem),
		Store:     st,
		Notifications: doctor.Notifications{
			Service: service, Actions: a.notifier != nil && a.notifier.Actions(),
			Problem: a.notifyProblem, Topics: a.topics(),
		},
		Tray:     tray,
		Shortcut: shortcut,
	})
}

// doctorTimeout bounds the providers' probes behind a doctor report.
const doctorTimeout = 5 * time.Second

// doctorProviders lists the shell and every provider of reg (which may be
// nil) for the doctor's providers check, each with its reason; problem is
// why a configured provider could not be read, if so.
func doctorProviders(shellReady bool, shellReason string, reg *registry.Registry, problem string) []doctor.Provider {
	ps := []doctor.Provider{{ID: "shell", Name: "Shell", Ready: shellReady, Reason: shellReason}}
	if problem != "" {
		ps = append(ps, doctor.Provider{ID: "configured", Name: "Connected providers", Reason: problem})
	}
	if reg == nil {
		return ps
	}
	ctx, cancel := context.WithTimeout(context.Background(), doctorTimeout)
	defer cancel()
	for _, l := range reg.List(ctx) {
		ps = append(ps, doctor.Provider{ID: l.ID, Name: l.Name, Ready: l.Ready, Reason: l.Reason})
	}
	return ps
}

// TaskList is the answer of ListTasks, as GET /api/tasks gives it.
type TaskList struct {
	Tasks      []task.Task        `json:"tasks"`
	Concurrent taskrun.Concurrent `json:"concurrent"`
}

// OutputChunk is a piece of a task's output and where the next one starts.
type OutputChunk struct {
	Data string `json:"data"`
	Next int64  `json:"next"`
}

// ListTasks returns every task and the slot use.
func (a *App) ListTasks() TaskList {
	tasks, c := a.tasks.List()
	return TaskList{Tasks: tasks, Concurrent: c}
}

// CreateTask starts a background task: from a chat (conversationId) as a
// chat of its own, else as a shell command.
func (a *App) CreateTask(req taskrun.CreateRequest) (task.Task, error) {
	if req.ConversationID != "" {
		t, err := a.handoff.Background(context.Background(), req)
		return t, bindErr(err)
	}
	t, err := a.tasks.Create(req)
	return t, bindErr(err)
}

// GetTask returns one task.
func (a *App) GetTask(id string) (task.Task, error) {
	t, err := a.tasks.Get(id)
	return t, bindErr(err)
}

// RemoveWorktree removes a finished helper's kept worktree and branch; one
// holding work only with confirm.
func (a *App) RemoveWorktree(id string, confirm bool) (task.Task, error) {
	t, err := a.handoff.RemoveWorktree(context.Background(), id, confirm)
	return t, bindErr(err)
}

// ReadOutput returns up to 1 MiB of a task's output from offset.
func (a *App) ReadOutput(id string, offset int64) (OutputChunk, error) {
	if _, err := a.tasks.Get(id); err != nil {
		return OutputChunk{}, bindErr(err)
	}
	if offset < 0 {
		return OutputChunk{}, bindErr(fmt.Errorf("%w: offset must be 0 or more", taskrun.ErrInvalid))
	}
	b, next, err := a.logs.ReadAt(id, offset, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return OutputChunk{Next: 0}, nil
	}
	if err != nil {
		return OutputChunk{Next: offset}, bindErr(err)
	}
	if len(b) == 0 { // at or past the end: carry on from the end
		return OutputChunk{Next: next}, nil
	}
	// A string crosses the bridge, so stop before a character cut in half;
	// the next read starts with its first byte.
	b = output.WholeRunes(b)
	return OutputChunk{Data: string(b), Next: offset + int64(len(b))}, nil
}

// Approvals lists every pending question, oldest first.
func (a *App) Approvals() []taskrun.Approval { return a.tasks.Approvals() }

// StopTask stops a waiting, working or asking task.
func (a *App) StopTask(id string) (task.Task, error) {
	t, err := a.tasks.StopTask(id)
	return t, bindErr(err)
}

// RetryTask runs a finished task again from the start.
func (a *App) RetryTask(id string) (task.Task, error) {
	t, err := a.tasks.Retry(id)
	return t, bindErr(err)
}

// DeleteTask removes a task that is not working; its chat stays.
func (a *App) DeleteTask(id string) error {
	return bindErr(a.tasks.Delete(id))
}

// AnswerTask answers a task's pending question.
func (a *App) AnswerTask(id, askID string, allow bool) (task.Task, error) {
	t, err := a.tasks.Answer(id, askID, allow)
	return t, bindErr(err)
}

// Preferences returns the person's preferences.
func (a *App) Preferences() (pref.Preferences, error) {
	p, err := a.store.Preferences()
	return p, bindErr(err)
}

// SetPreferences validates, saves and applies preferences.
func (a *App) SetPreferences(p pref.Preferences) (pref.Preferences, error) {
	saved, err := a.savePreferences(p)
	return saved, bindErr(err)
}

// savePreferences validates, saves and applies preferences; its errors are
// the engine's, for the gateway to map.
func (a *App) savePreferences(p pref.Preferences) (pref.Preferences, error) {
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%w: %v", taskrun.ErrInvalid, err)
	}
	if err := a.handoff.CheckFallback(context.Background(), p.LimitFallback); err != nil {
		return p, err
	}
	if err := a.store.PutPreferences(p); err != nil {
		return p, err
	}
	a.tasks.SetLimits(p.Limits)
	return p, nil
}

// gatewayPrefs gives the gateway the preferences with the engine's errors
// (the bindings' are JSON for the window).
type gatewayPrefs struct{ a *App }

func (g gatewayPrefs) Preferences() (pref.Preferences, error) { return g.a.store.Preferences() }
func (g gatewayPrefs) SetPreferences(p pref.Preferences) (pref.Preferences, error) {
	return g.a.savePreferences(p)
}

// ConversationList is the answer of ListConversations, as GET
// /api/conversations gives it.
type ConversationList struct {
	Conversations []conversation.Conversation `json:"conversations"`
}

// ListConversations returns the person's chats (task chats excluded), the
// most recently changed first.
func (a *App) ListConversations() ConversationList {
	return ConversationList{Conversations: a.chats.List()}
}

// CreateConversation starts a chat.
func (a *App) CreateConversation(req chat.CreateRequest) (conversation.Conversation, error) {
	c, err := a.chats.Create(req)
	return c, bindErr(err)
}

// GetConversation returns a chat with up to limit messages before seq
// before (0, 0: the newest 100).
func (a *App) GetConversation(id string, before uint64, limit int) (chat.Page, error) {
	p, err := a.chats.Get(id, before, limit)
	return p, bindErr(err)
}

// PatchConversation changes a chat's title, mode, provider, model, limit,
// or clears its taint.
func (a *App) PatchConversation(id string, req chat.PatchRequest) (conversation.Conversation, error) {
	c, err := a.chats.Patch(id, req)
	return c, bindErr(err)
}

// SendMessage sends the person's message; the reply streams in as events.
func (a *App) SendMessage(id, text string) (conversation.Message, error) {
	m, err := a.chats.Send(id, text)
	return m, bindErr(err)
}

// StopConversation stops a chat's running reply and any tool it runs.
func (a *App) StopConversation(id string) (conversation.Conversation, error) {
	c, err := a.chats.StopTurn(id)
	return c, bindErr(err)
}

// AnswerAsk allows or denies a chat's pending question.
func (a *App) AnswerAsk(id, askID string, allow bool) (conversation.Conversation, error) {
	c, err := a.chats.Answer(id, askID, allow)
	return c, bindErr(err)
}

// ListProviders returns every provider, as GET /api/providers does; keys
// are never in it.
func (a *App) ListProviders() gateway.ProviderList {
	return gateway.ProviderList{Providers: a.providers.List(context.Background())}
}

// PutProvider connects a provider or changes it; its key goes to the OS
// keyring, or to the store with a notice when there is none.
func (a *App) PutProvider(id string, req registry.PutRequest) (registry.Listing, error) {
	l, err := a.providers.Put(context.Background(), id, req)
	return l, bindErr(err)
}

// DeleteProvider removes a configured provider and its key.
func (a *App) DeleteProvider(id string) error {
	return bindErr(a.providers.Delete(id))
}

// bindErr gives a binding's error the same JSON body the HTTP API sends, so
// the frontend reads errors one way.
func bindErr(err error) error {
	if err == nil {
		return nil
	}
	_, body := gateway.ErrorFor(err)
	b, _ := json.Marshal(body)
	return errors.New(string(b))
}
