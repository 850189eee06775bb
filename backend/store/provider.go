package store

import (
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ProviderConfig is a provider the person connected, as stored. It never
// holds the provider's key: that lives in the OS keyring, or in the
// provider-keys bucket when there is none (KeyStorage says which).
type ProviderConfig struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // openai, anthropic, claude-code, codex, gemini
	Name string `json:"name"`
	// BaseURL is the API root for openai and anthropic kinds.
	BaseURL   string `json:"baseUrl,omitempty"`
	Model     string `json:"model,omitempty"`
	FastModel string `json:"fastModel,omitempty"`
	// Preset names the openai preset the defaults come from (ollama,
	// lmstudio, openrouter, openai).
	Preset string `json:"preset,omitempty"`
	// KeyStorage is where the key is kept ("keyring" or "store"); empty
	// when no key was given.
	KeyStorage string    `json:"keyStorage,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// Providers is the part of the store that keeps connected providers and,
// when the OS has no keyring, their keys. *Bolt implements it.
type Providers interface {
	// ProviderConfigs returns every stored provider, sorted by id.
	ProviderConfigs() ([]ProviderConfig, error)
	// PutProviderConfig writes c durably.
	PutProviderConfig(c ProviderConfig) error
	// DeleteProviderConfig removes a provider and any key kept for it in
	// the store, or returns ErrNotFound.
	DeleteProviderConfig(id string) error
	// ProviderKey returns the key kept in the store for a provider, or
	// ErrNotFound.
	ProviderKey(id string) (string, error)
	// PutProviderKey keeps key in the store for a provider.
	PutProviderKey(id, key string) error
	// DeleteProviderKey forgets the stored key of a provider; no key is no
	// error.
	DeleteProviderKey(id string) error
}

var _ Providers = (*Bolt)(nil)

// ProviderConfigs returns every stored provider, sorted by id. Records that
// cannot be decoded are left out and named in an error matching ErrCorrupt,
// returned with the others.
func (b *Bolt) ProviderConfigs() ([]ProviderConfig, error) {
	cs, err := listRecords(b, bucketProviders, "providers", func(c ProviderConfig) string { return c.ID })
	slices.SortFunc(cs, func(a, b ProviderConfig) int { return strings.Compare(a.ID, b.ID) })
	return cs, err
}

// PutProviderConfig writes c durably.
func (b *Bolt) PutProviderConfig(c ProviderConfig) error {
	return putRecord(b, bucketProviders, "provider", c.ID, c)
}

// DeleteProviderConfig removes a provider and its stored key in one
// transaction, or returns an error matching ErrNotFound.
func (b *Bolt) DeleteProviderConfig(id string) error {
	err := b.submit(
		op{bucket: bucketProviders, key: []byte(id), del: true, mustExist: true},
		op{bucket: bucketProviderKeys, key: []byte(id), del: true},
	)
	if err != nil {
		return fmt.Errorf("delete provider %s: %w", id, err)
	}
	return nil
}

// ProviderKey returns the key kept in the store for a provider, or an error
// matching ErrNotFound.
func (b *Bolt) ProviderKey(id string) (string, error) {
	var key string
	err := b.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketProviderKeys).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		key = string(v)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("get key of provider %s: %w", id, err)
	}
	return key, nil
}

// PutProviderKey keeps key in the store for a provider, in its own bucket
// so that the provider records never carry it.
func (b *Bolt) PutProviderKey(id, key string) error {
	if err := b.submit(op{bucket: bucketProviderKeys, key: []byte(id), value: []byte(key)}); err != nil {
		return fmt.Errorf("put key of provider %s: %w", id, err)
	}
	return nil
}

// DeleteProviderKey forgets the stored key of a provider; a provider
// without one is no error.
func (b *Bolt) DeleteProviderKey(id string) error {
	if err := b.submit(op{bucket: bucketProviderKeys, key: []byte(id), del: true}); err != nil {
		return fmt.Errorf("delete key of provider %s: %w", id, err)
	}
	return nil
}
