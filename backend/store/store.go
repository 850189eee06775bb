// Package store keeps Conch's state in bbolt. Nothing outside this package
// sees a bbolt transaction: callers use the Store interface, and every write
// is durable (fsync'd) when the call returns.
package store

import (
	"errors"
	"time"

	"conch/backend/pref"
	"conch/backend/task"
)

// ErrNotFound is returned when a task (or other record) with the asked id
// does not exist.
var ErrNotFound = errors.New("not found")

// ErrClosed is returned when the store is used after Close.
var ErrClosed = errors.New("store closed")

// ErrInUse is returned by Open when another process (usually another Conch)
// holds the database open.
var ErrInUse = errors.New("database is in use by another process (is another Conch running?)")

// ErrCorrupt is returned when a stored record cannot be decoded.
var ErrCorrupt = errors.New("corrupt record")

// ErrSchemaTooNew is returned by Open when the database was written by a newer
// Conch whose schema this one does not understand.
var ErrSchemaTooNew = errors.New("database schema is newer than this Conch understands")

// ErrNotConch is returned by OpenReadOnly and Verify when a file is not a
// Conch database: not bbolt at all, or bbolt without Conch's schema.
var ErrNotConch = errors.New("not a Conch database")

// Store is what the rest of Conch knows of persistence.
type Store interface {
	// Task returns one task, or ErrNotFound.
	Task(id string) (task.Task, error)
	// Tasks returns every task, oldest (CreatedAt, then ID) first.
	Tasks() ([]task.Task, error)
	// PutTask writes t; when it returns nil, t is durable.
	PutTask(t task.Task) error
	// PutTasks writes every task of ts in one transaction, all or none.
	PutTasks(ts []task.Task) error
	// DeleteTask removes a task, or returns ErrNotFound.
	DeleteTask(id string) error
	// ActiveTasks are the tasks that are not finished, oldest first in
	// each group: what healing and the queue need at start-up.
	ActiveTasks() ([]task.Task, error)
	// TasksInGroup is a page of one status group's tasks in the tasks
	// page's order (finished: the most recently ended first).
	TasksInGroup(g Group, f TaskFilter, cursor string, limit int) (Page, error)
	// TasksOf is a page of the tasks sent from one chat, newest first.
	TasksOf(parent, cursor string, limit int) (Page, error)
	// TaskCounts is how many tasks there are in each status.
	TaskCounts() (map[task.Status]int, error)
	// FinishedBefore are up to limit finished tasks that ended before
	// cutoff, the longest ago first.
	FinishedBefore(cutoff time.Time, limit int) ([]task.Task, error)
	// UnsettledWorktrees are the helpers whose worktree is not settled.
	UnsettledWorktrees() ([]task.Task, error)
	// OwedWakes are the finished tasks whose chat still waits for a turn
	// on their result.
	OwedWakes() ([]task.Task, error)
	// Preferences returns the stored preferences, or pref.Defaults() when none
	// were saved.
	Preferences() (pref.Preferences, error)
	// PutPreferences saves p durably.
	PutPreferences(p pref.Preferences) error
	// Close waits for pending writes and closes the database; safe twice.
	Close() error
}
