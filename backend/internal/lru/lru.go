// Package lru trims the in-memory caches that sit in front of the store:
// of the entries that may go, the least recently used are dropped.
package lru

import "sort"

// Trim deletes from m the least recently used of the entries that may go,
// until keep of those are left. idle says whether an entry may go and when
// it was last used (a larger number is more recent).
func Trim[K comparable, V any](m map[K]V, keep int, idle func(V) (ok bool, used int64)) {
	type free struct {
		key  K
		used int64
	}
	var frees []free
	for k, v := range m {
		if ok, used := idle(v); ok {
			frees = append(frees, free{k, used})
		}
	}
	if len(frees) <= keep {
		return
	}
	sort.Slice(frees, func(i, j int) bool { return frees[i].used < frees[j].used })
	for _, f := range frees[:len(frees)-keep] {
		delete(m, f.key)
	}
}
