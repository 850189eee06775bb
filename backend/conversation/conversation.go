// Package conversation holds a chat's stored record and its append-only
// messages, in the JSON shape the API and the bindings use. Pure: no I/O, so
// the store, the chat engine and the event bus can all share it.
package conversation

import (
	"encoding/json"
	"time"

	"conch/backend/ask"
	"conch/backend/task"
)

// OriginKind says where a conversation came from.
type OriginKind string

const (
	// FromChat is a chat the person started; it shows in the chat list.
	FromChat OriginKind = "chat"
	// FromTask is a task's own chat; it stays out of the chat list.
	FromTask OriginKind = "task"
	// FromRoutine is the chat of one run of a routine (RoutineID): a task's
	// own chat with no chat above it; it stays out of the chat list.
	FromRoutine OriginKind = "routine"
)

// Origin is where a conversation came from.
type Origin struct {
	Kind   OriginKind `json:"kind"`
	TaskID string     `json:"taskId,omitempty"`
	// ParentID is the chat a task's chat was sent from.
	ParentID string `json:"parentId,omitempty"`
	// RoutineID is the routine a run's chat belongs to.
	RoutineID string `json:"routineId,omitempty"`
}

// IsRun reports whether the conversation is a task's run (a task's or a
// routine run's own chat) rather than one the person talks in: it stays
// out of the chat list and is not given the hand-off tools.
func (o Origin) IsRun() bool { return o.Kind == FromTask || o.Kind == FromRoutine }

// Conversation is one chat's record. Its messages are stored apart.
type Conversation struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	Origin   Origin    `json:"origin"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Mode     task.Mode `json:"mode"`
	Cwd      string    `json:"cwd"`
	// Host is the host (SPEC §6) whose runner runs this chat's turns, as
	// its task; Cwd is a folder there. Its messages here are the host's,
	// seq for seq, brought home (chat.Manager.Mirror); none run here.
	Host string `json:"host,omitempty"`
	// Tainted is set by the guard when outside content came in; only the
	// person clears it.
	Tainted bool `json:"tainted"`
	// Spent is what the chat has cost so far, in USD.
	Spent float64 `json:"spent"`
	// Limit is the most the chat may spend, in USD; 0 means no limit.
	Limit float64 `json:"limit"`
	// JobID groups the chats of one delegate's helpers; together they
	// may spend JobCap (USD, 0: no cap of their own).
	JobID  string  `json:"jobId,omitempty"`
	JobCap float64 `json:"jobCap,omitempty"`
	// Running is true while a turn runs.
	Running bool `json:"running"`
	// Ask is the pending permission question, if any.
	Ask *ask.Question `json:"ask"`
	// LastSeq is the seq of the newest message (0: none yet).
	LastSeq uint64 `json:"lastSeq"`
	// HistoryFrom is the seq after which messages are sent to the model:
	// a task tried again from the start keeps its earlier try in the chat,
	// but its model does not see it (0: all of them).
	HistoryFrom uint64    `json:"historyFrom,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	// Rev increases by one on every change; keep the highest seen.
	Rev int64 `json:"rev"`
}

// Clone returns a copy that shares nothing mutable with c.
func (c Conversation) Clone() Conversation {
	if c.Ask != nil {
		a := *c.Ask
		c.Ask = &a
	}
	return c
}

// Kind says what a message is.
type Kind string

const (
	// User is what the person wrote.
	User Kind = "user"
	// Assistant is the model's reply text.
	Assistant Kind = "assistant"
	// ToolCallKind is the model asking to run a tool (ToolCall).
	ToolCallKind Kind = "tool-call"
	// ToolResultKind is what a tool gave back (ToolResult).
	ToolResultKind Kind = "tool-result"
	// AskKind is a permission question, or its answer (Ask).
	AskKind Kind = "ask"
	// TaskEvent is a task's status change, shown as a card.
	TaskEvent Kind = "task-event"
	// Notice is Conch speaking: why a turn stopped, errors, limits.
	Notice Kind = "notice"
	// Step is something a coding agent did with its own tools, past tense
	// (Text: "Read go.mod", "Ran go test ./...").
	Step Kind = "step"
)

// ToolCall is one call the model made.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Effect is the tool's side effect: none, edit, command or network.
	Effect string `json:"effect"`
	// Title says what it does, for a compact step ("Read go.mod").
	Title string `json:"title"`
}

// ToolResult is what a call gave back to the model.
type ToolResult struct {
	CallID  string `json:"callId"`
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"isError"`
}

// Message is one entry of a conversation. Messages are append-only: a
// message is never changed once stored.
type Message struct {
	ID             string        `json:"id"`
	ConversationID string        `json:"conversationId"`
	Seq            uint64        `json:"seq"`
	Kind           Kind          `json:"kind"`
	Text           string        `json:"text,omitempty"`
	ToolCall       *ToolCall     `json:"toolCall,omitempty"`
	ToolResult     *ToolResult   `json:"toolResult,omitempty"`
	Ask            *ask.Question `json:"ask,omitempty"`
	TaskEvent      *TaskUpdate   `json:"taskEvent,omitempty"`
	// Limit is set on the notice that a provider reached its usage limit,
	// so the chat can say it in the person's words, with the reset in their
	// local time and what they can do.
	Limit *LimitNotice `json:"limit,omitempty"`
	// ForModel marks a notice the model is told too, as the person's words
	// (a resumed task's "Conch stopped while this was running; carry on").
	ForModel  bool      `json:"forModel,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// LimitNotice is what is known of a provider's usage limit that ended a turn.
type LimitNotice struct {
	// Provider is the provider's id; Name what the person knows it by.
	Provider string `json:"provider"`
	Name     string `json:"name"`
	// Until is when the limit resets, if the provider said.
	Until *time.Time `json:"until,omitempty"`
	// Message is the provider's own words.
	Message string `json:"message,omitempty"`
}

// TaskUpdate is a task's status change as its parent chat records it. The
// transcript folds a task's events into one card; a Final event carries a
// finished background task's result back into the chat.
type TaskUpdate struct {
	TaskID string `json:"taskId"`
	// ConversationID is the task's own chat.
	ConversationID string      `json:"conversationId,omitempty"`
	TaskKind       task.Kind   `json:"taskKind"`
	Status         task.Status `json:"status"`
	Title          string      `json:"title"`
	By             string      `json:"by,omitempty"`
	GroupID        string      `json:"groupId,omitempty"`
	Part           int         `json:"part,omitempty"`
	Parts          int         `json:"parts,omitempty"`
	Summary        string      `json:"summary,omitempty"`
	Error          string      `json:"error,omitempty"`
	Note           string      `json:"note,omitempty"`
	Branch         string      `json:"branch,omitempty"`
	// Final marks the result coming back: the model reads it as news.
	Final bool `json:"final,omitempty"`
}

// Twin is how a chat's twin on a host stands (its runner's chat of the
// same task), and the messages it has that the chat here has not.
type Twin struct {
	// Messages are the twin's, in seq order; those the chat here has
	// already (by seq) are left out, and a gap ends what is taken.
	Messages []Message
	// Spent is what the twin has spent in all; Tainted whether outside
	// content reached it; Ask the question it waits on, if any; Running
	// whether a turn runs there.
	Spent   float64
	Tainted bool
	Ask     *ask.Question
	Running bool
}
