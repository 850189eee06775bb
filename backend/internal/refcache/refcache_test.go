package refcache_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"conch/backend/internal/refcache"
)

type entry struct {
	refcache.Counted
	key   string
	mu    sync.Mutex
	uses  int
	final bool // may go when nobody holds it
}

// rig is a cache with a store behind it that counts its loads.
type rig struct {
	mu    sync.Mutex
	c     *refcache.Cache[string, *entry]
	loads map[string]int
}

func newRig(keep int, mayGo func(*entry) bool) *rig {
	r := &rig{loads: map[string]int{}}
	r.c = refcache.New[string](&r.mu, keep, mayGo)
	return r
}

var errMissing = errors.New("missing")

func (r *rig) load(k string) (*entry, error) {
	if k == "" {
		return nil, errMissing
	}
	r.loads[k]++
	return &entry{key: k, final: true}, nil
}

func (r *rig) acquire(t *testing.T, k string) (*entry, func()) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	e, release, err := r.c.Acquire(k, r.load)
	if err != nil {
		t.Fatal(err)
	}
	return e, release
}

func TestAnEntryIsLoadedOnceWhileItIsKept(t *testing.T) {
	r := newRig(2, nil)
	a, release := r.acquire(t, "a")
	b, release2 := r.acquire(t, "a")
	if a != b || r.loads["a"] != 1 {
		t.Fatalf("two acquires of a gave %p and %p after %d loads; want one entry, loaded once", a, b, r.loads["a"])
	}
	if !a.Held() {
		t.Fatal("an acquired entry says nobody holds it")
	}
	release()
	release2()
	if a.Held() {
		t.Fatal("a released entry says it is held")
	}
	r.mu.Lock()
	_, _, err := r.c.Acquire("", r.load)
	r.mu.Unlock()
	if !errors.Is(err, errMissing) {
		t.Fatalf("a failed load gave %v; want its own error", err)
	}
	if r.c.Len() != 1 {
		t.Fatalf("kept %d entries after a failed load; want 1", r.c.Len())
	}
}

func TestAHeldEntryIsNeverDroppedAndTheLeastRecentOthersAre(t *testing.T) {
	r := newRig(2, func(e *entry) bool { return e.final })
	held, releaseHeld := r.acquire(t, "held")
	r.mu.Lock()
	r.c.Put("working", &entry{key: "working"}) // never final: never goes
	r.mu.Unlock()
	for i := range 10 {
		_, release := r.acquire(t, fmt.Sprint("k", i))
		release()
	}
	r.mu.Lock()
	n := r.c.Len()
	_, keptHeld := r.c.Get("held")
	_, keptWorking := r.c.Get("working")
	_, keptNewest := r.c.Get("k9")
	_, keptOldest := r.c.Get("k0")
	r.mu.Unlock()
	if n > 2*2+2 || !keptHeld || !keptWorking || !keptNewest || keptOldest {
		t.Fatalf("kept %d entries (held %v, working %v, k9 %v, k0 %v); want at most 6, the held, the working and the newest, not the oldest",
			n, keptHeld, keptWorking, keptNewest, keptOldest)
	}
	again, releaseAgain := r.acquire(t, "held")
	if again != held || r.loads["held"] != 1 {
		t.Fatal("a held entry was loaded a second time")
	}
	releaseAgain()
	releaseHeld()
}

func TestHoldKeepsAnEntryUntilReleased(t *testing.T) {
	r := newRig(0, nil)
	e, release := r.acquire(t, "a")
	e.Hold()
	release()
	r.mu.Lock()
	r.c.Trim()
	r.c.Put("b", &entry{})
	r.c.Trim()
	_, kept := r.c.Get("a")
	r.mu.Unlock()
	if !kept {
		t.Fatal("an entry someone holds was dropped")
	}
	r.c.Release(e)
	r.mu.Lock()
	_, kept = r.c.Get("a")
	r.mu.Unlock()
	if kept {
		t.Fatal("an entry nobody holds stayed past its cache's size")
	}
}

// A cache whose entries mostly may not go yet (a long queue's tasks)
// cannot be trimmed; a release then must not read every entry each time,
// yet what may go still goes within keep releases.
func TestACacheThatCannotShrinkIsNotReadWholeAtEachRelease(t *testing.T) {
	const keep, stuck, releases = 64, 2000, 2000
	looked := 0
	r := newRig(keep, func(e *entry) bool { looked++; return e.final })
	r.mu.Lock()
	for i := range stuck {
		r.c.Put(fmt.Sprint("queued", i), &entry{}) // not final: may not go
	}
	r.mu.Unlock()
	for i := range releases {
		_, release := r.acquire(t, fmt.Sprint("k", i))
		release()
	}
	// Each look reads at most every entry; one in keep+1 releases looks.
	if most := (releases/(keep+1) + 1) * (stuck + 3*keep); looked > most {
		t.Fatalf("%d releases read %d entries; want at most %d (a look every %d releases)", releases, looked, most, keep+1)
	}
	r.mu.Lock()
	n := r.c.Len()
	r.mu.Unlock()
	if n > stuck+3*keep+1 {
		t.Fatalf("kept %d entries; want at most the %d that may not go and %d others", n, stuck, 3*keep+1)
	}
	// Once the queue has gone, the cache comes back to its size.
	r.mu.Lock()
	for i := range stuck {
		r.c.Remove(fmt.Sprint("queued", i))
	}
	r.mu.Unlock()
	for i := range keep + 2 {
		_, release := r.acquire(t, fmt.Sprint("late", i))
		release()
	}
	r.mu.Lock()
	n = r.c.Len()
	r.mu.Unlock()
	if n > 2*keep {
		t.Fatalf("kept %d entries once nothing was stuck; want at most %d", n, 2*keep)
	}
}

func TestRemoveMakesTheNextAcquireLoadAgain(t *testing.T) {
	r := newRig(4, nil)
	a, release := r.acquire(t, "a")
	r.mu.Lock()
	r.c.Remove("a")
	r.mu.Unlock()
	release() // its holder lets go as usual
	b, release := r.acquire(t, "a")
	defer release()
	if a == b || r.loads["a"] != 2 {
		t.Fatal("an acquire after Remove gave the removed entry")
	}
}

func TestReleasingMoreOftenThanHeldPanics(t *testing.T) {
	r := newRig(4, nil)
	e, release := r.acquire(t, "a")
	release()
	defer func() {
		if recover() == nil {
			t.Fatal("a second release did not panic")
		}
	}()
	r.c.Release(e)
}

// Many goroutines acquire, hold and release the same keys and keys of
// their own, with a cache small enough to trim all the time: every holder
// of a key has the same entry, and nothing is left held.
func TestManyGoroutinesShareOneEntryPerKey(t *testing.T) {
	const workers, rounds, keep = 16, 400, 3
	r := newRig(keep, func(e *entry) bool { return e.final })
	var lmu sync.Mutex
	live := map[string]map[*entry]int{} // the entries held now, by key
	enter := func(e *entry) {
		lmu.Lock()
		defer lmu.Unlock()
		if live[e.key] == nil {
			live[e.key] = map[*entry]int{}
		}
		live[e.key][e]++
		if len(live[e.key]) != 1 {
			t.Errorf("key %s has %d entries held at once", e.key, len(live[e.key]))
		}
	}
	leave := func(e *entry) {
		lmu.Lock()
		defer lmu.Unlock()
		if live[e.key][e]--; live[e.key][e] == 0 {
			delete(live[e.key], e)
		}
	}
	var wg sync.WaitGroup
	var all sync.Map
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				k := fmt.Sprint("shared", i%5)
				if i%2 == 1 {
					k = fmt.Sprint("own", w, "-", i%7)
				}
				r.mu.Lock()
				e, release, err := r.c.Acquire(k, r.load)
				r.mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				all.Store(e, true)
				enter(e)
				e.mu.Lock()
				e.uses++
				e.mu.Unlock()
				if i%3 == 0 {
					e.Hold() // a second holder, as a run started from a call is
					enter(e)
					leave(e)
					r.c.Release(e)
				}
				leave(e)
				release()
			}
		})
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.c.Len(); n > 2*keep {
		t.Errorf("kept %d entries nobody holds; want at most %d", n, 2*keep)
	}
	uses := 0
	all.Range(func(k, _ any) bool {
		e := k.(*entry)
		if e.Held() {
			t.Errorf("entry %s is still held", e.key)
		}
		uses += e.uses
		return true
	})
	if uses != workers*rounds {
		t.Errorf("the entries were used %d times; want %d", uses, workers*rounds)
	}
}
