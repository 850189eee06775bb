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
	// Change is the file write the question is about, so the person sees
	// what changes before allowing it (nil for anything else). It is
	// never changed once made, so copies may share it.
	Change *Change `json:"change,omitempty"`
	// Answer is empty while it waits and set on the message that settles
	// it.
	Answer Answer `json:"answer,omitempty"`
}

// MaxChange bounds each side of a Change, in bytes: a longer side is cut
// there and Truncated is set.
const MaxChange = 32 << 10

// Change is a file write as a question shows it: the file's path (as the
// tool was given it), its text before and after. For an edit, Before and
// After are the replaced piece and its replacement; for a whole write,
// the file as it is (empty for a new file) and as it would be.
type Change struct {
	Path      string `json:"path"`
	Before    string `json:"before"`
	After     string `json:"after"`
	New       bool   `json:"new,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// NewChange returns the change of path from before to after, each side
// cut at MaxChange (on a line end when it can be).
func NewChange(path, before, after string, isNew bool) *Change {
	c := &Change{Path: path, New: isNew}
	c.Before, c.Truncated = cut(before)
	var t bool
	c.After, t = cut(after)
	c.Truncated = c.Truncated || t
	return c
}

func cut(s string) (string, bool) {
	if len(s) <= MaxChange {
		return s, false
	}
	s = s[:MaxChange]
	for i := len(s) - 1; i > MaxChange/2; i-- {
		if s[i] == '\n' {
			return s[:i+1], true
		}
	}
	// No line end in the last half: back off to a whole UTF-8 character.
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xC0 {
		s = s[:len(s)-1]
	}
	return s, true
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
