package registry_test

import (
	"path/filepath"
	"testing"

	"conch/backend/provider/registry"
)

// The real keyring is tried here, in a file that sorts before
// keyring_test.go, whose mock replaces go-keyring's backend for good.

// TestKeyFallbackReal uses go-keyring itself on a machine without a Secret
// Service (D-Bus pointed nowhere, so no session bus is started).
func TestKeyFallbackReal(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	b := setup(t)
	b.cfg.Keyring = registry.System{}
	r := open(t, b.cfg)
	if r.KeyStorage() != registry.InStore {
		t.Skip("this machine has a working keyring")
	}
	checkStoreFallback(t, b, r)
}

// TestNoSessionBus: without a D-Bus session the Secret Service is not
// asked at all (asking would autolaunch a bus), and keys go to the store.
func TestNoSessionBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	b := setup(t)
	b.cfg.Keyring = registry.System{}
	r := open(t, b.cfg)
	if r.KeyStorage() != registry.InStore {
		t.Fatalf("KeyStorage = %q without a session bus", r.KeyStorage())
	}
}
