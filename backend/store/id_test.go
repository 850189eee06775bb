package store

import (
	"testing"

	"github.com/google/uuid"
)

func TestNewIDsAreUUIDsInTheOrderTheyWereMade(t *testing.T) {
	prev := ""
	for i := range 20000 {
		id := NewID()
		u, err := uuid.Parse(id)
		if err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		if u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("id %q is version %d, variant %v; want a version 7 RFC 4122 UUID", id, u.Version(), u.Variant())
		}
		// The store orders keys by their bytes: a later id sorts after.
		if id <= prev {
			t.Fatalf("id %d, %q, sorts before or with the one made before it, %q", i, id, prev)
		}
		prev = id
	}
}
