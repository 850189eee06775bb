package sessionbus

import (
	"errors"
	"testing"

	"conch/backend/testrig/dbustest"
)

func TestConnectOnlyWhenThereIsABus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if _, err := Connect(); !errors.Is(err, ErrNone) {
		t.Fatalf("without a bus: %v", err)
	}
	addr := dbustest.Start(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	conn, err := Connect()
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}
