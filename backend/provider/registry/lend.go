package registry

import (
	"errors"
	"fmt"

	"conch/backend/store"
)

// A desktop lends a host's runner an API-model provider for the tasks it
// sends there with the person's OK (SPEC §6): its record and its key,
// which the runner keeps in memory only, for as long as a task it was
// lent for is there, and never writes down.

// ErrNotLendable is a provider that cannot be lent: not connected, or
// not an API model (a coding-agent CLI, the shell).
var ErrNotLendable = errors.New("only a connected API-model provider can be lent to a host")

// Lendable is provider id as it would be lent: its record (for one the
// environment offers, the record it was made from) and its key.
func (r *Registry) Lendable(id string) (store.ProviderConfig, string, error) {
	r.mu.RLock()
	rec, configured := r.records[id]
	e, found := r.found[id]
	r.mu.RUnlock()
	switch {
	case configured && (rec.Kind == KindOpenAI || rec.Kind == KindAnthropic):
		k := r.readKey(rec)
		rec.KeyStorage = ""
		return rec, k.value, nil
	case !configured && found && (e.source == FromEnv || e.source == Detected):
		rec = store.ProviderConfig{ID: id, Kind: e.fallback.Kind, Name: e.fallback.Name, Preset: e.preset}
		if e.source == Detected {
			rec.BaseURL = e.baseURL
		}
		return rec, r.envKey(rec), nil
	}
	return store.ProviderConfig{}, "", fmt.Errorf("%w (%q is not one)", ErrNotLendable, id)
}

// lent is a provider lent to this runner, and the tasks it was lent for.
type lent struct {
	entry
	owners map[string]bool
}

// Lend makes rec, with key, a provider here for owner (a task's id) until
// Unlend(owner): in memory only. A provider of that id lent already is
// replaced (the newest record and key win) and kept for both owners.
func (r *Registry) Lend(owner string, rec store.ProviderConfig, key string) error {
	if rec.Kind != KindOpenAI && rec.Kind != KindAnthropic {
		return fmt.Errorf("%w (kind %q)", ErrNotLendable, rec.Kind)
	}
	if rec.ID == "" || owner == "" {
		return errors.New("a lent provider needs an id and a task")
	}
	e := r.build(rec, keyOf(key))
	e.source = Lent
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.lent[rec.ID]
	if !ok {
		l = &lent{owners: map[string]bool{}}
		r.lent[rec.ID] = l
	}
	l.entry = e
	l.owners[owner] = true
	return nil
}

// Unlend lets go of what was lent for owner: a provider no task holds any
// more is forgotten, its key with it.
func (r *Registry) Unlend(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, l := range r.lent {
		delete(l.owners, owner)
		if len(l.owners) == 0 {
			delete(r.lent, id)
		}
	}
}

// keyOf is a key given in memory.
func keyOf(v string) key { return key{value: v} }

// Borrowers are the tasks something is lent for now.
func (r *Registry) Borrowers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for _, l := range r.lent {
		for o := range l.owners {
			if !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
	}
	return out
}
