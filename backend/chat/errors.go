package chat

import (
	"errors"

	"conch/backend/errcode"
)

// Errors the chat engine returns; callers test with errors.Is, the surfaces
// show their codes.
var (
	// ErrNotFound is returned for an unknown conversation id.
	ErrNotFound = errcode.New(errcode.NotFound, "no such conversation")
	// ErrInvalid is returned for a request that can never succeed as
	// written (empty text, an unknown mode, a title too long).
	ErrInvalid = errcode.ErrInvalid
	// ErrConflict is returned when the conversation's state does not allow
	// the operation (a second message while a reply runs, a stale answer,
	// a task's chat made wider than its parent).
	ErrConflict = errcode.ErrConflict
	// ErrStopped is returned when a turn the person stopped did not
	// finish: a task's turn that ends with it was stopped, not failed.
	ErrStopped = errors.New("stopped by the person")
)
