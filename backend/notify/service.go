package notify

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"conch/backend/ask"
	"conch/backend/event"
	"conch/backend/internal/brief"
	"conch/backend/pref"
	"conch/backend/startstop"
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
	cfg   Config
	since time.Time // when it was made: finishes from then on are announced

	mu    sync.Mutex
	asked map[string]string // task id → the question already announced

	life    sync.Mutex // guards state and watched
	state   startstop.State
	watched bool // Start began watching: Stop lets go of the clicks
}

// NewService returns a service; call Start.
func NewService(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Topics == nil {
		cfg.Topics = func() pref.Topics { return pref.Defaults().Notifications }
	}
	return &Service{cfg: cfg, since: time.Now(), asked: map[string]string{}}
}

// Start begins watching and takes the notifier's clicks; Stop ends both.
// Call it once the task runner has started: it announces what changed
// since NewService (a queued task the runner started may have finished
// already), and the clicks that came while Conch was starting (kept by the
// notifier until now) are handled then, against the tasks as the runner
// left them. A question still waiting is answered; one whose task was
// interrupted by the restart is refused, and the refusal logged.
func (s *Service) Start(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	ctx, err := s.state.Start(ctx)
	if err != nil {
		return fmt.Errorf("start notifications: %w", err)
	}
	// Subscribed before looking, so nothing falls between the two.
	sub := s.cfg.Bus.Subscribe(256)
	s.catchUp(s.since)
	s.cfg.Notifier.Handle(s.Action)
	s.watched = true
	s.state.WG.Add(1)
	go func() {
		defer s.state.WG.Done()
		s.watch(ctx, sub)
	}()
	return nil
}

// Stop ends watching and waits; safe twice and before Start. Clicks from
// then on are kept by the notifier, not handled.
func (s *Service) Stop() {
	s.life.Lock()
	watched := s.watched
	s.watched = false
	s.life.Unlock()
	if watched {
		s.cfg.Notifier.Handle(nil)
	}
	s.state.Stop(&s.life, nil)
}

// watch follows sub, and after a drop a new subscription, until ctx ends
// or the bus closes.
func (s *Service) watch(ctx context.Context, sub *event.Subscription) {
	for since := time.Now(); ; sub = s.cfg.Bus.Subscribe(256) {
		s.follow(ctx, sub)
		sub.Close()
		if ctx.Err() != nil || s.cfg.Bus.Closed() {
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
	finished := t.Status == task.Done || t.Status == task.Failed
	s.settled(t, finished && topics.Tasks)
	switch {
	case finished && !t.Notified && topics.Tasks:
		marked, ok, err := s.cfg.Tasks.MarkNotified(t.ID)
		if err != nil || !ok {
			return
		}
		s.raise(marked, event.NoticeFinished, FinishMessage(marked))
	case t.Status == task.NeedsYou && t.Ask != nil && topics.Approvals:
		s.mu.Lock()
		seen := s.asked[t.ID] == t.Ask.ID
		s.asked[t.ID] = t.Ask.ID
		s.mu.Unlock()
		if !seen {
			s.raise(t, event.NoticeQuestion, AskMessage(t))
		}
	}
}

// settled takes down the question announced for t once t no longer waits
// on it (answered in the app or the tray, stopped, interrupted): the
// notification never times out, and its buttons would only be refused.
// A finish about to be announced replaces it instead.
func (s *Service) settled(t task.Task, replaced bool) {
	s.mu.Lock()
	askID, was := s.asked[t.ID]
	waiting := t.Status == task.NeedsYou && t.Ask != nil && t.Ask.ID == askID
	if was && !waiting {
		delete(s.asked, t.ID)
	}
	s.mu.Unlock()
	// Another question of t's replaces this one's notification itself.
	if !was || replaced || (t.Status == task.NeedsYou && t.Ask != nil) {
		return
	}
	if err := s.cfg.Notifier.Withdraw(Tag(t.ID)); err != nil {
		s.cfg.Log.Info("answered question's notification not withdrawn", "task", t.ID, "err", err)
	}
}

// raise shows m, and tells the surfaces (task.notice) it was raised: a
// browser page shows it too, and Web Push carries it to the browsers whose
// page is closed. The decision is made once, here.
func (s *Service) raise(t task.Task, kind event.NoticeKind, m Message) {
	if err := s.cfg.Notifier.Send(m); err != nil {
		s.cfg.Log.Info("notification not shown", "tag", m.Tag, "err", err)
	}
	s.cfg.Bus.Publish(event.Event{Type: event.TaskNotice, Task: &t,
		Notice: &event.Notice{Kind: kind, Tag: m.Tag, Title: m.Title, Body: m.Body}})
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
		if err == nil && (t.Status != task.NeedsYou || t.Ask == nil) {
			err = fmt.Errorf("the task is %s, not waiting on a question", t.Status)
		}
		if err != nil {
			s.cfg.Log.Info("answer from a notification dropped", "task", id, "action", action, "err", err)
			return
		}
		if _, err := s.cfg.Tasks.Answer(id, t.Ask.ID, action == ActionAllow); err != nil {
			s.cfg.Log.Info("answer from a notification refused", "task", id, "err", err)
		}
	}
}

// Tag is the notification tag of a task.
func Tag(taskID string) string { return "task-" + taskID }

// FinishMessage says how a task ended, in a line or two of plain text that
// are useful without opening the app.
func FinishMessage(t task.Task) Message {
	m := Message{Tag: Tag(t.ID)}
	var body []string
	title, summary := brief.Plain(t.Title), brief.FirstLine(brief.Plain(t.Summary))
	switch t.Status {
	case task.Done:
		m.Title = title + " — done"
		if line := summary; line != "" {
			m.Title += ": " + brief.Clip(line, 80)
		}
	default:
		m.Title = title + " — didn't finish"
		if t.Error != "" {
			body = append(body, capitalise(brief.Plain(t.Error))+".")
		}
		if line := summary; line != "" {
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

// AskMessage puts a task's question with Allow and Deny buttons, in plain
// text. A destructive command's says so, as the page and the tray do.
func AskMessage(t task.Task) Message {
	m := Message{
		Tag:     Tag(t.ID),
		Title:   brief.Plain(t.Title) + " — needs your OK",
		Body:    brief.Plain(t.Ask.Detail),
		Actions: []string{ActionAllow, ActionDeny},
	}
	if why := ask.Danger(t.Ask.Tool, t.Ask.Detail); why != "" {
		m.Title = "⚠ Destructive: " + m.Title
		m.Body += "\n⚠ " + why
	}
	return m
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
