package notify

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"conch/backend/event"
	"conch/backend/internal/brief"
	"conch/backend/pref"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// Tasks is what the service needs of the task runner.
type Tasks interface {
	// Active are the tasks that are not finished.
	Active() ([]task.Task, taskrun.Concurrent)
	// Page is a page of a status group's tasks (finished: the most
	// recently ended first).
	Page(g store.Group, f store.TaskFilter, cursor string, limit int) (store.Page, error)
	Get(id string) (task.Task, error)
	MarkNotified(id string) (task.Task, bool, error)
	Answer(id, askID string, allow bool) (task.Task, error)
}

// Config wires a Service.
type Config struct {
	Tasks    Tasks
	Bus      *event.Bus
	Notifier Notifier
	// Topics returns the person's notification topics now.
	Topics func() pref.Topics
	// Open brings Conch forward on the chat a task came from.
	Open func(taskID string)
	Log  *slog.Logger
}

// Service watches task changes and raises one notification per finish and
// per question, and routes clicks back: open the chat, or answer.
type Service struct {
	cfg Config

	mu    sync.Mutex
	asked map[string]string // task id → the question already announced

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewService returns a service; call Start.
func NewService(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Topics == nil {
		cfg.Topics = func() pref.Topics { return pref.Defaults().Notifications }
	}
	return &Service{cfg: cfg, asked: map[string]string{}}
}

// Start begins watching; Stop ends it.
func (s *Service) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.watch(ctx)
}

// Stop ends watching and waits; safe twice and before Start.
func (s *Service) Stop() {
	s.once.Do(func() {
		if s.cancel == nil {
			return
		}
		s.cancel()
		<-s.done
	})
}

func (s *Service) watch(ctx context.Context) {
	defer close(s.done)
	since := time.Now()
	for ctx.Err() == nil {
		sub := s.cfg.Bus.Subscribe(256)
		s.follow(ctx, sub)
		sub.Close()
		if s.cfg.Bus.Closed() {
			return
		}
		// Dropped for falling behind: look at what changed meanwhile. A
		// finish is still unmarked in the store, so it is announced once.
		next := time.Now()
		s.catchUp(since)
		since = next
	}
}

// catchUp looks at every task that is not finished and at those that
// finished since then, as if each had just changed.
func (s *Service) catchUp(since time.Time) {
	active, _ := s.cfg.Tasks.Active()
	for _, t := range active {
		s.changed(t)
	}
	for cursor := ""; ; {
		p, err := s.cfg.Tasks.Page(store.GroupFinished, store.TaskFilter{}, cursor, 100)
		if err != nil {
			return
		}
		for _, t := range p.Tasks {
			// Newest first: the first that ended before since ends the look
			// (with a second's slack for clocks that step).
			if t.EndedAt != nil && t.EndedAt.Before(since.Add(-time.Second)) {
				return
			}
			s.changed(t)
		}
		if cursor = p.Next; cursor == "" {
			return
		}
	}
}

func (s *Service) follow(ctx context.Context, sub *event.Subscription) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Done():
			return
		case ev := <-sub.C():
			if ev.Type == event.TaskChanged && ev.Task != nil {
				s.changed(*ev.Task)
			}
			if ev.Type == event.TaskDeleted {
				s.mu.Lock()
				delete(s.asked, ev.ID)
				s.mu.Unlock()
			}
		}
	}
}

// changed raises what a task's new state calls for.
func (s *Service) changed(t task.Task) {
	topics := s.cfg.Topics()
	switch {
	case (t.Status == task.Done || t.Status == task.Failed) && !t.Notified && topics.Tasks:
		marked, ok, err := s.cfg.Tasks.MarkNotified(t.ID)
		if err != nil || !ok {
			return
		}
		s.send(FinishMessage(marked))
	case t.Status == task.NeedsYou && t.Ask != nil && topics.Approvals:
		s.mu.Lock()
		seen := s.asked[t.ID] == t.Ask.ID
		s.asked[t.ID] = t.Ask.ID
		s.mu.Unlock()
		if !seen {
			s.send(AskMessage(t))
		}
	}
}

func (s *Service) send(m Message) {
	if err := s.cfg.Notifier.Send(m); err != nil {
		s.cfg.Log.Info("notification not shown", "tag", m.Tag, "err", err)
	}
}

// Action handles a click or button on a task's notification.
func (s *Service) Action(tag, action string) {
	id, ok := strings.CutPrefix(tag, "task-")
	if !ok {
		return
	}
	switch action {
	case ActionOpen:
		if s.cfg.Open != nil {
			s.cfg.Open(id)
		}
	case ActionAllow, ActionDeny:
		t, err := s.cfg.Tasks.Get(id)
		if err != nil || t.Ask == nil {
			return
		}
		if _, err := s.cfg.Tasks.Answer(id, t.Ask.ID, action == ActionAllow); err != nil {
			s.cfg.Log.Info("answer from a notification refused", "task", id, "err", err)
		}
	}
}

// Tag is the notification tag of a task.
func Tag(taskID string) string { return "task-" + taskID }

// FinishMessage says how a task ended, in a line or two that are useful
// without opening the app.
func FinishMessage(t task.Task) Message {
	m := Message{Tag: Tag(t.ID)}
	var body []string
	switch t.Status {
	case task.Done:
		m.Title = t.Title + " — done"
		if line := brief.FirstLine(t.Summary); line != "" {
			m.Title += ": " + brief.Clip(line, 80)
		}
	default:
		m.Title = t.Title + " — didn't finish"
		if t.Error != "" {
			body = append(body, capitalise(t.Error)+".")
		}
		if line := brief.FirstLine(t.Summary); line != "" {
			body = append(body, brief.Clip(line, 120))
		}
	}
	if t.Status == task.Done && t.Provider == "shell" && t.ExitCode != nil {
		body = append(body, fmt.Sprintf("Exited with code %d.", *t.ExitCode))
	}
	if t.Worktree != nil && t.Worktree.Kept {
		body = append(body, "Its work is on branch "+t.Worktree.Branch+".")
	}
	m.Body = strings.Join(body, "\n")
	return m
}

// AskMessage puts a task's question with Allow and Deny buttons.
func AskMessage(t task.Task) Message {
	return Message{
		Tag:     Tag(t.ID),
		Title:   t.Title + " — needs your OK",
		Body:    t.Ask.Detail,
		Actions: []string{ActionAllow, ActionDeny},
	}
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
