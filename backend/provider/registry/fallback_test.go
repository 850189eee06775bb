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
