// Package ask holds the one record of a permission question, shared by a
// task and the chat it runs in: the same id, the same expiry, wherever the
// person answers it (the chat, its card, the approval inbox, a
// notification's buttons). Pure: no I/O.
package ask

import "time"

// Timeout is how long a question waits for the person before it is
// denied. One clock: the task's runner keeps it for a task's question, the
// chat for a chat's own.
const Timeout = time.Hour

// Question is a permission question waiting for the person, or, on a chat
// message that carries Answer, how it was settled.
type Question struct {
	ID string `json:"id"`
	// CallID is the tool call the question is about ("" when a coding
	// agent asked about one of its own steps).
	CallID    string    `json:"callId,omitempty"`
	Tool      string    `json:"tool"`
	Detail    string    `json:"detail"`
	AskedAt   time.Time `json:"askedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Answer is empty while it waits and set on the message that settles
	// it.
	Answer Answer `json:"answer,omitempty"`
}

// Answer is how a question was settled.
type Answer string

const (
	// Allowed: the person allowed it.
	Allowed Answer = "allowed"
	// Declined: the person denied it.
	Declined Answer = "declined"
	// TimedOut: nobody answered within Timeout (denied).
	TimedOut Answer = "timed-out"
	// Stopped: the turn or task was stopped (or Conch closed) while it
	// waited.
	Stopped Answer = "stopped"
)

// Answers lists every way a question is settled.
var Answers = []Answer{Allowed, Declined, TimedOut, Stopped}

// New is a question asked at now that expires after Timeout (or timeout,
// when it is above zero: tests).
func New(id, callID, tool, detail string, now time.Time, timeout time.Duration) Question {
	if timeout <= 0 {
		timeout = Timeout
	}
	now = now.UTC()
	return Question{ID: id, CallID: callID, Tool: tool, Detail: detail, AskedAt: now, ExpiresAt: now.Add(timeout)}
}
