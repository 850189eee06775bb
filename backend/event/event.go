// Package event is the in-process fan-out of state changes to the surfaces
// (WebSocket clients, the Wails window, the notifier).
//
// Publish never blocks: a subscriber whose buffer is full is dropped (its
// Done channel closes) and must resubscribe and reload what it shows.
package event

import (
	"sync"

	"conch/backend/conversation"
	"conch/backend/task"
)

// Type names an event. The same strings are used by the frontend.
type Type string

const (
	// TaskChanged carries the whole task after a change was committed.
	TaskChanged Type = "task.changed"
	// TaskDeleted carries the id of a task that was removed.
	TaskDeleted Type = "task.deleted"
	// Open asks the surfaces to show the chat the task with ID came from
	// (a click on its notification). The window comes forward.
	Open Type = "app.open"
	// OpenChat asks the surfaces to show the chat with ID (its question was
	// picked in the tray menu). The window comes forward.
	OpenChat Type = "app.open-chat"
	// Compose asks the page to focus the composer; when it already holds
	// text, the page sends it to the background (the global shortcut).
	Compose Type = "app.compose"
	// TaskNotice carries the notification Conch raised for a task (Task,
	// Notice): once per finish and per question, when the person's topics
	// want it. A browser page shows it as its own; Web Push sends it on.
	TaskNotice Type = "task.notice"
	// Reload tells a surface it missed events: reload what it shows.
	Reload Type = "reload"
	// ConversationChanged carries the whole conversation (without its
	// messages) after a change was committed.
	ConversationChanged Type = "conversation.changed"
	// MessageAdded carries a message after it was committed.
	MessageAdded Type = "message.added"
	// MessageDelta carries a piece of an assistant reply as it streams
	// (Delta). It is not stored: the whole reply follows as MessageAdded
	// with the same message id.
	MessageDelta Type = "message.delta"
	// TaskOutput says a running task's log has grown to OutputBytes (ID):
	// announced every 50 ms while it grows, never stored, so a page reads
	// new output within that rather than at the next save of outputBytes.
	TaskOutput Type = "task.output"
	// HostChanged carries the id of a host whose record changed (its
	// status among them: reached, or unreachable since when).
	HostChanged Type = "host.changed"
	// ProvidersChanged carries the id of a provider connected, changed or
	// removed: read the providers again (a page another client changed
	// them under lists them all the same).
	ProvidersChanged Type = "providers.changed"
)

// Delta is a piece of an assistant reply that is still streaming. Pieces of
// one reply share MessageID and come in order; append them.
type Delta struct {
	ConversationID string `json:"conversationId"`
	MessageID      string `json:"messageId"`
	Text           string `json:"text"`
}

// NoticeKind says what a task's notification is for.
type NoticeKind string

const (
	// NoticeFinished is a task's finish (done or failed).
	NoticeFinished NoticeKind = "finished"
	// NoticeQuestion is a task's question, waiting for the person's OK.
	NoticeQuestion NoticeKind = "question"
)

// Notice is the notification raised for a task, in plain text: the same
// words the OS notification shows.
type Notice struct {
	Kind NoticeKind `json:"kind"`
	// Tag is "task-<id>": a later notice of the task replaces this one.
	Tag   string `json:"tag"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// Event is one change, in the JSON shape sent to clients.
type Event struct {
	Type Type       `json:"type"`
	Task *task.Task `json:"task,omitempty"`
	ID   string     `json:"id,omitempty"`
	// Prev is, on task.changed and task.deleted, the status the task had
	// before ("" for a new task), so a surface keeps its counts without
	// holding every task.
	Prev task.Status `json:"prev,omitempty"`
	// Conversation is set on conversation.changed.
	Conversation *conversation.Conversation `json:"conversation,omitempty"`
	// Message is set on message.added.
	Message *conversation.Message `json:"message,omitempty"`
	// Delta is set on message.delta.
	Delta *Delta `json:"delta,omitempty"`
	// Notice is set on task.notice.
	Notice *Notice `json:"notice,omitempty"`
	// OutputBytes is set on task.output.
	OutputBytes int64 `json:"outputBytes,omitempty"`
}

// Bus fans events out to subscribers without ever waiting on one.
type Bus struct {
	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	closed bool
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Subscription receives events until it is closed or dropped.
type Subscription struct {
	bus  *Bus
	c    chan Event
	done chan struct{}
	once sync.Once
}

// C delivers events in publish order.
func (s *Subscription) C() <-chan Event { return s.c }

// Done is closed when the subscription ends: closed by its owner, dropped for
// falling behind, or the bus shut down.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Close ends the subscription; safe to call more than once.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	delete(s.bus.subs, s)
	s.bus.mu.Unlock()
	s.end()
}

func (s *Subscription) end() { s.once.Do(func() { close(s.done) }) }

// Subscribe returns a subscription buffering up to buffer events (at least 1).
func (b *Bus) Subscribe(buffer int) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	s := &Subscription{bus: b, c: make(chan Event, buffer), done: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		s.end()
		return s
	}
	b.subs[s] = struct{}{}
	return s
}

// Publish hands e to every subscriber that has room and drops the others.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.c <- e:
		default:
			delete(b.subs, s)
			s.end()
		}
	}
}

// Closed reports whether Close was called.
func (b *Bus) Closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close ends every subscription; later subscriptions start ended.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		s.end()
	}
}
