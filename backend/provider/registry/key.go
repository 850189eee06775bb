package registry

import (
	"errors"
	"fmt"
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

// LockedNotice is what the person reads when a key is kept in the store
// because the keyring was locked (Conch does not ask to unlock it).
const LockedNotice = "The system keyring is locked, so the key is kept in Conch's database (readable by your user). Unlock the keyring, then save the key again to move it there."

// MoveNotice is what the person reads when a key is kept in the store
// from a time the keyring could not take it, and a keyring answers now.
const MoveNotice = "The key is kept in Conch's database (readable by your user): the system keyring could not take it when it was saved. Save the key again to move it there."

// probeUser is looked up once to learn whether the keyring answers; it is
// never written.
const probeUser = "conch-keyring-probe"

// probeTimeout bounds the keyring probe: a D-Bus without a Secret Service
// can take its time to say so. (SecretService bounds itself below it; this
// is for the keyrings of macOS and Windows.)
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

// System is the OS keyring, under KeyringService: the Secret Service of
// the session bus (SecretService) on Linux and the BSDs, go-keyring's
// Keychain and Credential Manager on macOS and Windows. go-keyring's own
// Secret Service client is not used: on a locked collection it shows an
// unlock prompt and waits for it without end.
type System struct{}

// Get reads the key of id.
func (System) Get(id string) (string, error) {
	if secretService() {
		return SecretService{}.Get(id)
	}
	return keyring.Get(KeyringService, id)
}

// Set files key under id.
func (System) Set(id, key string) error {
	if secretService() {
		return SecretService{}.Set(id, key)
	}
	return keyring.Set(KeyringService, id, key)
}

// Delete forgets the key of id.
func (System) Delete(id string) error {
	if secretService() {
		return SecretService{}.Delete(id)
	}
	return keyring.Delete(KeyringService, id)
}

// secretService reports whether the OS keeps secrets in a Secret Service.
func secretService() bool {
	switch runtime.GOOS {
	case "darwin", "windows", "ios", "android":
		return false
	}
	return true
}

// usable reports whether k answers at all: a lookup that finds nothing is
// an answer, an error of any other kind (no Secret Service, no D-Bus, a
// locked keyring) is not.
func usable(k Keyring) error {
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
