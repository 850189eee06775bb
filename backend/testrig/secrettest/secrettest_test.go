//go:build unix

package secrettest_test

import (
	"testing"

	"conch/backend/testrig/secrettest"
)

// The daemon serves an unlocked login collection that secret-tool, a
// client of its own, reads and writes, and Lock locks it.
func TestARealKeyringUnlocksAndLocks(t *testing.T) {
	secrettest.Need(t)
	e := secrettest.Bus(t, "")
	e.Keyring(t, true)
	if _, ok := e.Lookup(t, "conch-test", "nobody"); ok {
		t.Fatal("a fresh keyring holds a secret")
	}
	e.Store(t, "conch-test", "someone", "s3cret")
	if got, ok := e.Lookup(t, "conch-test", "someone"); !ok || got != "s3cret" {
		t.Fatalf("lookup = %q, %v", got, ok)
	}
	e.Lock(t)
}
