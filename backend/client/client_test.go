package client_test

import (
	"testing"

	"conch/backend/client"
	"conch/backend/event"
)

// The follower reads the bus's own event names.
func TestEventNamesAreTheBuses(t *testing.T) {
	for got, want := range map[string]event.Type{
		client.EventTaskChanged: event.TaskChanged,
		client.EventTaskDeleted: event.TaskDeleted,
		client.EventReload:      event.Reload,
	} {
		if got != string(want) {
			t.Errorf("client says %q, the bus %q", got, want)
		}
	}
}
