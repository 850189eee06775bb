package store

import (
	"slices"
	"strings"
	"time"

	"conch/backend/task"
)

// bucketRoutines holds the routines (SPEC §7), one JSON record per id.
var bucketRoutines = []byte("routines")

// RoutineKind says what a routine runs.
type RoutineKind string

const (
	// RoutinePrompt asks the routine's provider, as a background chat task.
	RoutinePrompt RoutineKind = "prompt"
	// RoutineCommand runs a shell command, as a task on the built-in shell.
	RoutineCommand RoutineKind = "command"
)

// Routine is a prompt or a shell command on a schedule, as stored. The
// routine package owns what it means; the store only keeps it.
type Routine struct {
	ID   string      `json:"id"`
	Name string      `json:"name"`
	Kind RoutineKind `json:"kind"`
	// Text is the prompt, or the command.
	Text string `json:"text"`
	// Schedule is a 5-field cron expression (minute hour day month
	// weekday), read in TimeZone.
	Schedule string `json:"schedule"`
	// TimeZone is an IANA zone name; empty is the machine's own.
	TimeZone string    `json:"timeZone,omitempty"`
	Cwd      string    `json:"cwd"`
	Mode     task.Mode `json:"mode"`
	Provider string    `json:"provider"`
	Model    string    `json:"model,omitempty"`
	// Host is kept for runs on another computer (SPEC §6); nothing uses
	// it yet.
	Host string `json:"host,omitempty"`
	// CatchUp runs a run missed while Conch was off once when it starts;
	// without it a missed run is skipped.
	CatchUp bool `json:"catchUp"`
	// Paused stops new runs; a run already working carries on.
	Paused bool `json:"paused"`
	// FromConversationID is the chat the routine was made from, if any.
	FromConversationID string `json:"fromConversationId,omitempty"`
	// Checked is the last time the schedule was looked at: a run due
	// after it and before now was missed.
	Checked time.Time `json:"checked"`
	// LastTaskID is the task of the newest run; LastRunAt when it began.
	LastTaskID string     `json:"lastTaskId,omitempty"`
	LastRunAt  *time.Time `json:"lastRunAt,omitempty"`
	// Runs counts the runs started.
	Runs int `json:"runs"`
	// SkippedAt is the last time a run came due while the one before
	// still worked (so it did not start), and Skipped says why.
	SkippedAt *time.Time `json:"skippedAt,omitempty"`
	Skipped   string     `json:"skipped,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	// Rev increases by one on every change.
	Rev int64 `json:"rev"`
}

// Routines returns every stored routine, oldest first (CreatedAt, then
// id). Records that cannot be decoded are left out and named in an error
// matching ErrCorrupt, returned with the others.
func (b *Bolt) Routines() ([]Routine, error) {
	rs, err := listRecords(b, bucketRoutines, "routines", func(r Routine) string { return r.ID })
	slices.SortFunc(rs, func(a, b Routine) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return rs, err
}

// PutRoutine writes r durably, in one transaction.
func (b *Bolt) PutRoutine(r Routine) error { return putRecord(b, bucketRoutines, "routine", r.ID, r) }

// DeleteRoutine removes a routine durably, or returns an error matching
// ErrNotFound. The tasks and chats of its runs stay.
func (b *Bolt) DeleteRoutine(id string) error { return deleteRecord(b, bucketRoutines, "routine", id) }
