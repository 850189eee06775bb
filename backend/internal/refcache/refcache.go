// Package refcache is the in-memory cache of records that sits in front of
// the store: a record someone holds (a run, a turn, a call in progress) is
// never dropped, so a key has one entry at a time and no change is ever
// made through a copy that is not the only one; of the others, the least
// recently used go once there are too many.
package refcache

import (
	"iter"
	"maps"
	"sync"
	"sync/atomic"

	"conch/backend/internal/lru"
)

// Counted is embedded in the entries a Cache keeps: it counts who holds
// one and remembers when it was last acquired.
type Counted struct {
	refs atomic.Int32
	used int64 // guarded by the cache's lock
}

// Hold holds the entry once more, for one who holds it already; it needs
// no lock. Let go of it with the cache's Release.
func (c *Counted) Hold() { c.refs.Add(1) }

// Held says whether anyone holds the entry.
func (c *Counted) Held() bool { return c.refs.Load() > 0 }

func (c *Counted) counted() *Counted { return c }

// Entry is a pointer to a struct that embeds Counted.
type Entry interface{ counted() *Counted }

// Cache keeps entries by key. Like a sync.Cond it works under its owner's
// lock, so the owner changes its own state and the cache's in one step:
// every method is called with that lock held, except Release and the
// release funcs Acquire gives, which take it.
type Cache[K comparable, V Entry] struct {
	l     sync.Locker
	keep  int
	mayGo func(V) bool
	m     map[K]V
	tick  int64
	// skip is how many Trims pass without looking, after one that left
	// more than twice keep entries because the rest may not go yet.
	skip int
}

// New returns an empty cache guarded by l. Once it holds more than twice
// keep entries, it drops the least recently acquired of those nobody holds
// and mayGo allows (nil: any), down to keep of them. mayGo is called with l
// held.
func New[K comparable, V Entry](l sync.Locker, keep int, mayGo func(V) bool) *Cache[K, V] {
	if mayGo == nil {
		mayGo = func(V) bool { return true }
	}
	return &Cache[K, V]{l: l, keep: keep, mayGo: mayGo, m: map[K]V{}}
}

// Acquire returns k's entry, loaded with load if it is not kept (the load
// runs with the lock held, so no second entry for k can be made meanwhile),
// and holds it until release is called. load's error is returned as it is.
func (c *Cache[K, V]) Acquire(k K, load func(K) (V, error)) (v V, release func(), err error) {
	v, ok := c.m[k]
	if !ok {
		if v, err = load(k); err != nil {
			return v, nil, err
		}
		c.m[k] = v
	}
	n := v.counted()
	n.Hold()
	c.tick++
	n.used = c.tick
	return v, func() { c.Release(v) }, nil
}

// Release lets go of v, held by Acquire or Hold, and trims the cache. It
// takes the lock; ReleaseLocked is for a caller that has it.
func (c *Cache[K, V]) Release(v V) {
	c.l.Lock()
	defer c.l.Unlock()
	c.ReleaseLocked(v)
}

// ReleaseLocked is Release with the lock held.
func (c *Cache[K, V]) ReleaseLocked(v V) {
	if v.counted().refs.Add(-1) < 0 {
		panic("refcache: an entry was released more often than it was held")
	}
	c.Trim()
}

// Get returns k's entry without holding it: it may go once the lock is let
// go, unless the caller holds it (or keeps it from going through mayGo).
func (c *Cache[K, V]) Get(k K) (V, bool) {
	v, ok := c.m[k]
	return v, ok
}

// Put keeps v as k's entry, in place of any other.
func (c *Cache[K, V]) Put(k K, v V) { c.m[k] = v }

// Remove forgets k's entry. One who still holds it may go on using it (and
// releases it as usual); the next Acquire loads k again.
func (c *Cache[K, V]) Remove(k K) { delete(c.m, k) }

// Len is how many entries are kept.
func (c *Cache[K, V]) Len() int { return len(c.m) }

// All yields every entry kept, in no order. The cache must not change
// while it runs.
func (c *Cache[K, V]) All() iter.Seq2[K, V] { return maps.All(c.m) }

// Trim drops, once more than twice keep entries are kept, the least
// recently acquired of those that may go, down to keep of them. When what
// is left is still more than twice keep (held, or not allowed to go, as a
// long queue's tasks are), the next keep Trims do not look again: each
// look reads every entry, and a release that looked each time would make
// a cache of n such entries cost n at every release.
func (c *Cache[K, V]) Trim() {
	if len(c.m) <= 2*c.keep {
		c.skip = 0
		return
	}
	if c.skip > 0 {
		c.skip--
		return
	}
	lru.Trim(c.m, c.keep, func(v V) (bool, int64) {
		n := v.counted()
		if n.Held() {
			return false, 0
		}
		return c.mayGo(v), n.used
	})
	if len(c.m) > 2*c.keep {
		c.skip = c.keep
	}
}
