package taskrun

import (
	"errors"

	"conch/backend/errcode"
)

// Errors the runner returns; callers test with errors.Is, the surfaces show
// their codes.
var (
	// ErrNotFound is returned for an unknown (or deleted) task id.
	ErrNotFound = errcode.New(errcode.NotFound, "no such task")
	// ErrInvalid is returned for a request that can never succeed as
	// written (empty text, an unknown mode or provider, a missing folder).
	ErrInvalid = errcode.ErrInvalid
	// ErrConflict is returned when the task's state does not allow the
	// operation (deleting a working task, answering a stale question).
	ErrConflict = errcode.ErrConflict
	// ErrStopped is returned by an executor whose work the person stopped
	// another way than StopTask (the Stop of the task's own chat): the task
	// ends stopped, not failed.
	ErrStopped = errors.New("stopped by request")
)

// Sentinel errors an executor may return; the runner turns them into the
// task's reason, which the person reads as it is.
//
//lint:file-ignore ST1005 these errors are the task's reasons, written as the card shows them
var (
	// ErrDeclined is returned when the person answered a question with Deny.
	ErrDeclined = errors.New("You declined")
	// ErrNoAnswer is returned when a question timed out.
	ErrNoAnswer = errors.New("No answer within an hour")
	// ErrPlanMode is returned by executors that cannot do anything read-only.
	ErrPlanMode = errors.New("plan mode runs nothing")
	// ErrInterrupted, wrapped in a sentence of its own, ends the task
	// interrupted (resumable) rather than failed: the runner on its host
	// stopped while it ran.
	ErrInterrupted = errInterrupted
)

// errNoHosts is a task for a host when this Conch reaches none.
var errNoHosts = errcode.New(errcode.Invalid, "this Conch does not run tasks on other computers")
