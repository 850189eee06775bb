package registry_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"conch/backend/provider/registry"
	"conch/backend/store"
)

// A registry over a store, with no keyring: the key goes to the store and
// the listing says so, without the key. (Anthropic is not ready here: the
// example reaches no network.)
func Example() {
	dir, _ := os.MkdirTemp("", "conch-example")
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "conch.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	r, err := registry.New(context.Background(), registry.Config{
		Store:     st,
		Keyring:   noKeyring{},
		Getenv:    func(string) string { return "" },
		LookPath:  func(string) (string, error) { return "", errors.New("not on PATH") },
		OllamaURL: "http://127.0.0.1:1/v1", // nothing listens there
		// The example stays on this computer; a real one leaves this nil.
		HTTPClient: loopbackOnly(),
	})
	if err != nil {
		log.Fatal(err)
	}
	key := "sk-ant-example"
	l, err := r.Put(context.Background(), "anthropic", registry.PutRequest{Kind: "anthropic", APIKey: &key})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.IDs(), l.Source, l.KeySet, l.KeyStorage)
	fmt.Println(l.KeyNotice)
	// Output:
	// [anthropic shell] configured true store
	// No system keyring was found, so the key is kept in Conch's database (readable by your user).
}
