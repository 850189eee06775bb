package registry

import "conch/backend/errcode"

// Errors the registry returns; callers test with errors.Is, the surfaces
// show their codes.
var (
	// ErrNotFound is returned when no provider has the asked id.
	ErrNotFound = errcode.New(errcode.NotFound, "no such provider")
	// ErrInvalid is returned when a configuration is refused (unknown
	// kind, a base URL that is not absolute http(s), a key of odd length).
	ErrInvalid = errcode.New(errcode.Invalid, "invalid provider configuration")
	// ErrConflict is returned when deleting a provider Conch found on its
	// own (an env var, Ollama running, a CLI on PATH).
	ErrConflict = errcode.New(errcode.Conflict, "provider cannot be deleted")
	// ErrLocked is returned when the keyring's collection is locked.
	// Conch never asks the Secret Service to unlock it: that shows a
	// password prompt and waits as long as the person leaves it open, with
	// the request that asked for the key waiting too. A key to keep then
	// goes to the store; one to forget from the keyring is refused.
	ErrLocked = errcode.New(errcode.Conflict, "the system keyring is locked")
)
