package lru

import (
	"maps"
	"slices"
	"testing"
)

func TestTrimDropsTheLeastRecentlyUsedOfThoseThatMayGo(t *testing.T) {
	type entry struct {
		used int64
		held bool
	}
	m := map[string]entry{"a": {1, false}, "b": {2, true}, "c": {3, false}, "d": {4, false}, "e": {5, true}}
	Trim(m, 2, func(e entry) (bool, int64) { return !e.held, e.used })
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, []string{"b", "c", "d", "e"}) {
		t.Fatalf("kept %v; want the held b and e, and the two most recent of the rest", got)
	}
	Trim(m, 5, func(e entry) (bool, int64) { return true, e.used })
	if len(m) != 4 {
		t.Fatalf("trimmed to %d with room for 5", len(m))
	}
}
