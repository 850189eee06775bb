package store

import "github.com/google/uuid"

// NewID is the id of a new task or conversation: a UUID whose first 48 bits
// are the time in milliseconds (version 7), each one after the last. Records
// made together then sit together in the store's B+tree, so a commit
// rewrites a few pages at its end. With random (version 4) ids every new
// record lands on a page of its own: in a store of 30,000 tasks, 64 tasks
// changing at once wrote 126 pages a commit and persisted 9,800 changes a
// second, against 31 pages and 30,000 a second with these.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }
