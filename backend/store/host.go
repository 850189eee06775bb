package store

import (
	"slices"
	"strings"
	"time"

	"conch/backend/pref"
)

// bucketHosts holds the hosts, other computers reached over SSH (SPEC §6),
// one JSON record per id.
var bucketHosts = []byte("hosts")

// HostStatus is where a host stands, as its last connection found it.
type HostStatus string

const (
	// HostNew has not been tested yet.
	HostNew HostStatus = "new"
	// HostReady connected and ran Conch's test the last time.
	HostReady HostStatus = "ready"
	// HostUnknownKey shows a key no known_hosts file has: Fingerprint
	// waits for the person's OK, and nothing connects until then.
	HostUnknownKey HostStatus = "unknown-key"
	// HostKeyChanged shows a key other than the one accepted: refused.
	HostKeyChanged HostStatus = "key-changed"
	// HostNoKey took no key of the person's (it wants a password).
	HostNoKey HostStatus = "no-key"
	// HostUnreachable could not be reached, or ssh failed otherwise.
	HostUnreachable HostStatus = "unreachable"
)

// HostProvider is a coding-agent CLI found on the host user's PATH.
type HostProvider struct {
	// ID is the provider's ("claude", "codex", "gemini").
	ID   string `json:"id"`
	Path string `json:"path"`
	// Version is the first line of its --version, in its own words.
	Version string `json:"version"`
}

// Host is another computer Conch reaches over SSH, as stored. The host
// package owns what it means; the store only keeps it.
type Host struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Target is an ssh config alias ("devbox") or user@host:port.
	Target string     `json:"target"`
	Status HostStatus `json:"status"`
	// Reason says why the status is what it is, in a sentence.
	Reason string `json:"reason,omitempty"`
	// Version is the version of the Conch runner found there ("": none).
	Version string `json:"version,omitempty"`
	// Providers are the coding-agent CLIs found there at the last test.
	Providers []HostProvider `json:"providers"`
	// Limits are how many tasks may run there at once, apart from the
	// ones on this computer.
	Limits pref.Limits `json:"limits"`
	// Models are the API-model providers (by id) the person allowed to
	// carry tasks there: each run takes the provider's key with it, in
	// memory only.
	Models []string `json:"models"`
	// Fingerprint is the SHA256 fingerprint of the host key waiting for
	// the person's OK; PendingKey is that key's known_hosts line.
	Fingerprint string `json:"fingerprint,omitempty"`
	PendingKey  string `json:"pendingKey,omitempty"`
	// System is `uname -sm` there; User and Home whom Conch runs as.
	System string `json:"system,omitempty"`
	User   string `json:"user,omitempty"`
	Home   string `json:"home,omitempty"`
	// Since is, while Status is unreachable, when Conch last lost it: the
	// cards of its tasks say "unreachable since 10:42".
	Since *time.Time `json:"since,omitempty"`
	// TestedAt is when it was last tested.
	TestedAt  *time.Time `json:"testedAt,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	// Rev increases by one on every change.
	Rev int64 `json:"rev"`
}

// Hosts returns every stored host, oldest first (CreatedAt, then id).
// Records that cannot be decoded are left out and named in an error
// matching ErrCorrupt, returned with the others.
func (b *Bolt) Hosts() ([]Host, error) {
	hs, err := listRecords(b, bucketHosts, "hosts", func(h Host) string { return h.ID })
	slices.SortFunc(hs, func(a, b Host) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return hs, err
}

// PutHost writes h durably, in one transaction.
func (b *Bolt) PutHost(h Host) error { return putRecord(b, bucketHosts, "host", h.ID, h) }

// DeleteHost removes a host durably, or returns an error matching
// ErrNotFound.
func (b *Bolt) DeleteHost(id string) error { return deleteRecord(b, bucketHosts, "host", id) }
