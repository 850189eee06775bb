package registry

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/zalando/go-keyring"
)

// KeyringService is the service name Conch's keys are filed under in the OS
// keyring; the user is the provider's id.
const KeyringService = "conch"

// Where a key is kept, as KeyStorage reports it.
const (
	// InKeyring is the OS keyring (Secret Service, macOS Keychain, Windows
	// Credential Manager).
	InKeyring = "keyring"
	// InStore is Conch's own database, used when there is no keyring.
	InStore = "store"
)

// StoreNotice is what the person reads when a key is kept in the store.
const StoreNotice = "No system keyring was found, so the key is kept in Conch's database (readable by your user)."

// probeUser is looked up once to learn whether the keyring answers; it is
// never written.
const probeUser = "conch-keyring-probe"

// probeTimeout bounds the keyring probe: a D-Bus without a Secret Service
// can take its time to say so.
const probeTimeout = 2 * time.Second

// Keyring keeps secrets by provider id. System is the OS keyring; tests may
// pass their own.
type Keyring interface {
	// Get returns the key of id, or an error matching keyring.ErrNotFound.
	Get(id string) (string, error)
	// Set files key under id.
	Set(id, key string) error
	// Delete forgets the key of id; a missing key matches
	// keyring.ErrNotFound.
	Delete(id string) error
}

// System is the OS keyring through go-keyring, under KeyringService.
// keyring.MockInit replaces what it reaches, for tests.
type System struct{}

// Get reads the key of id.
func (System) Get(id string) (string, error) { return keyring.Get(KeyringService, id) }

// Set files key under id.
func (System) Set(id, key string) error { return keyring.Set(KeyringService, id, key) }

// Delete forgets the key of id.
func (System) Delete(id string) error { return keyring.Delete(KeyringService, id) }

// usable reports whether k answers at all: a lookup that finds nothing is
// an answer, an error of any other kind (no Secret Service, no D-Bus) is not.
func usable(k Keyring) error {
	if _, ok := k.(System); ok {
		if err := sessionBus(); err != nil {
			return err
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := k.Get(probeUser)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, keyring.ErrNotFound) {
			return nil
		}
		return err
	case <-time.After(probeTimeout):
		return fmt.Errorf("the keyring did not answer within %s", probeTimeout)
	}
}

// sessionBus refuses the Secret Service when there is no D-Bus session to
// find it on. Asking anyway would have D-Bus autolaunch a session bus of
// its own, a daemon left running that holds no keyring (servers, CI).
func sessionBus() error {
	switch runtime.GOOS {
	case "darwin", "windows", "ios", "android":
		return nil
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		return errors.New("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
	}
	return nil
}
