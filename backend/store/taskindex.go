package store

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"conch/backend/task"
)

// The task index lets Conch answer with a page of tasks, count them, and
// find the ones healing needs, without reading every record: it is kept in
// the same transaction as the records themselves (see indexTask), so it is
// never behind them. Its keys, in bucketTaskIndex:
//
//	g <group> 0 <sort key, 8 bytes> <id>  →  <status> 0 <title, lower case>
//	p <parent chat> 0 <created, inverted> <id>
//	w 0 <id>   (a helper whose worktree is not settled yet)
//	o 0 <id>   (a finished task that still owes its chat a wake)
//	r 0 <id>   →  the task's status and its keys above (see indexed.encode),
//	              so a change finds the entries to replace without decoding
//	              the record it replaces
//
// and the number of tasks in each status is in meta (keyTaskCounts). A
// group's tasks are in the order the tasks page shows them: finished ones
// newest first (by when they ended), the others oldest first.

var (
	bucketTaskIndex = []byte("task-index")
	keyTaskCounts   = []byte("task-counts")
	// keyTaskIndexed records that the index was built, so a database from
	// before it is indexed once, at Open.
	keyTaskIndexed = []byte("task-index-built-2")
)

// Group is a status group of the tasks page.
type Group string

// The groups, in the order the page shows them.
const (
	GroupNeedsYou Group = "needs-you"
	GroupWorking  Group = "working"
	GroupWaiting  Group = "waiting"
	GroupFinished Group = "finished"
)

// Groups are every group, in the page's order.
var Groups = []Group{GroupNeedsYou, GroupWorking, GroupWaiting, GroupFinished}

// Valid reports whether g is a known group.
func (g Group) Valid() bool {
	for _, x := range Groups {
		if g == x {
			return true
		}
	}
	return false
}

// GroupOf is the group a status belongs to.
func GroupOf(s task.Status) Group {
	switch s {
	case task.NeedsYou:
		return GroupNeedsYou
	case task.Running:
		return GroupWorking
	case task.Queued:
		return GroupWaiting
	}
	return GroupFinished
}

// ErrBadCursor is returned for a page cursor this store did not give out
// for that list.
var ErrBadCursor = errors.New("bad cursor")

// nanos is t in Unix nanoseconds, clamped to what fits (a zero time is 0).
func nanos(t time.Time) uint64 {
	if t.IsZero() || t.Before(time.Unix(0, 0)) {
		return 0
	}
	if t.After(time.Unix(0, math.MaxInt64)) {
		return math.MaxInt64
	}
	return uint64(t.UnixNano())
}

// sortKey orders t in its group.
func sortKey(t task.Task) uint64 {
	if GroupOf(t.Status) == GroupFinished {
		at := t.CreatedAt
		if t.EndedAt != nil {
			at = *t.EndedAt
		}
		return math.MaxUint64 - nanos(at)
	}
	return nanos(t.CreatedAt)
}

// indexEntries are t's index keys and values.
func indexEntries(t task.Task) map[string][]byte {
	out := map[string][]byte{}
	g := []byte("g" + string(GroupOf(t.Status)) + "\x00")
	g = binary.BigEndian.AppendUint64(g, sortKey(t))
	g = append(g, t.ID...)
	out[string(g)] = []byte(string(t.Status) + "\x00" + strings.ToLower(t.Title))
	if t.ParentConversationID != "" {
		p := []byte("p" + t.ParentConversationID + "\x00")
		p = binary.BigEndian.AppendUint64(p, math.MaxUint64-nanos(t.CreatedAt))
		p = append(p, t.ID...)
		out[string(p)] = nil
	}
	if w := t.Worktree; w != nil && w.Path != "" && !w.Kept {
		out["w\x00"+t.ID] = nil
	}
	if t.Status.Finished() && t.Wake == task.WakePending && t.ParentConversationID != "" {
		out["o\x00"+t.ID] = nil
	}
	return out
}

// indexed is what a task record puts in the index: its status (for the
// counts) and its entries.
type indexed struct {
	status  task.Status
	entries map[string][]byte
}

func indexOf(t task.Task) indexed { return indexed{t.Status, indexEntries(t)} }

// reverseKey is the key of id's reverse record.
func reverseKey(id []byte) []byte { return append([]byte("r\x00"), id...) }

// encode is the reverse record: the status, then each key in order, each
// with its length before it.
func (x indexed) encode() []byte {
	b := binary.AppendUvarint(nil, uint64(len(x.status)))
	b = append(b, x.status...)
	for _, k := range slices.Sorted(maps.Keys(x.entries)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

// decodeReverse reads what encode wrote; ok is false for anything else.
func decodeReverse(b []byte) (status task.Status, keys [][]byte, ok bool) {
	next := func() ([]byte, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, false
		}
		v := b[w : w+int(n)]
		b = b[w+int(n):]
		return v, true
	}
	s, ok := next()
	if !ok {
		return "", nil, false
	}
	for len(b) > 0 {
		k, ok := next()
		if !ok {
			return "", nil, false
		}
		keys = append(keys, k)
	}
	return task.Status(s), keys, true
}

// countsTx gathers one transaction's changes to the counts, read at the
// first and written once at its end.
type countsTx struct {
	tx     *bolt.Tx
	counts map[task.Status]int
}

func (c *countsTx) add(tx *bolt.Tx, s task.Status, n int) error {
	if c.counts == nil {
		counts, err := taskCounts(tx)
		if err != nil {
			return err
		}
		c.tx, c.counts = tx, counts
	}
	c.counts[s] += n
	return nil
}

func (c *countsTx) flush() error {
	if c.counts == nil {
		return nil
	}
	return putTaskCounts(c.tx, c.counts)
}

// taskCounts reads the counts in meta.
func taskCounts(tx *bolt.Tx) (map[task.Status]int, error) {
	counts := map[task.Status]int{}
	if raw := tx.Bucket(bucketMeta).Get(keyTaskCounts); raw != nil {
		if err := json.Unmarshal(raw, &counts); err != nil {
			return nil, fmt.Errorf("read task counts: %w: %w", ErrCorrupt, err)
		}
	}
	return counts, nil
}

func putTaskCounts(tx *bolt.Tx, counts map[task.Status]int) error {
	for s, n := range counts {
		if n <= 0 {
			delete(counts, s)
		}
	}
	raw, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyTaskCounts, raw)
}

// indexTask brings task id's index entries to now (nil: the task was
// deleted), replacing those its reverse record names, and its status's count.
func indexTask(tx *bolt.Tx, counts *countsTx, id []byte, now *indexed) error {
	old, had, err := reindex(tx.Bucket(bucketTaskIndex), id, now)
	if err != nil {
		return err
	}
	if had && now != nil && old == now.status {
		return nil // the counts stay as they are
	}
	if had {
		if err := counts.add(tx, old, -1); err != nil {
			return err
		}
	}
	if now == nil {
		return nil
	}
	return counts.add(tx, now.status, 1)
}

// reindex brings the entries of record id in the index bucket idx to now
// (nil: the record is gone), replacing those its reverse record names. It
// returns the status the reverse record held, and whether there was one.
// An entry already there with the same value, and a reverse record that
// would not change, are left alone: a change that moves the record nowhere
// in the index (a step, an answer) rewrites none of its pages.
func reindex(idx *bolt.Bucket, id []byte, now *indexed) (task.Status, bool, error) {
	rk := reverseKey(id)
	var old task.Status
	had, same := false, false
	var fresh []byte
	if now != nil {
		fresh = now.encode()
	}
	var stale [][]byte
	var kept []string
	if raw := idx.Get(rk); raw != nil {
		status, keys, ok := decodeReverse(raw)
		old, had = status, ok
		same = now != nil && bytes.Equal(raw, fresh)
		// Compared and copied first: bbolt's slices are valid only until
		// the next change.
		c := idx.Cursor()
		for _, k := range keys {
			if now != nil {
				if v, keep := now.entries[string(k)]; keep {
					if at, was := c.Seek(k); bytes.Equal(at, k) && bytes.Equal(was, v) {
						kept = append(kept, string(k))
					}
					continue
				}
			}
			stale = append(stale, bytes.Clone(k))
		}
	}
	for _, k := range stale {
		if err := idx.Delete(k); err != nil {
			return "", false, err
		}
	}
	if now == nil {
		return old, had, idx.Delete(rk)
	}
	for k, v := range now.entries {
		if slices.Contains(kept, k) {
			continue
		}
		if err := idx.Put([]byte(k), v); err != nil {
			return "", false, err
		}
	}
	if same {
		return old, had, nil
	}
	return old, had, idx.Put(rk, fresh)
}

// putIndexed writes x's entries and its reverse record for id.
func putIndexed(idx *bolt.Bucket, id []byte, x indexed) error {
	for k, v := range x.entries {
		if err := idx.Put([]byte(k), v); err != nil {
			return err
		}
	}
	return idx.Put(reverseKey(id), x.encode())
}

// buildTaskIndex indexes every task from scratch (a database from before
// the index, or a restored one).
func buildTaskIndex(tx *bolt.Tx) error {
	if tx.Bucket(bucketTaskIndex) != nil {
		if err := tx.DeleteBucket(bucketTaskIndex); err != nil {
			return err
		}
	}
	idx, err := tx.CreateBucket(bucketTaskIndex)
	if err != nil {
		return err
	}
	counts := map[task.Status]int{}
	err = tx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
		t, err := decodeTask(k, v)
		if err != nil {
			return nil // reported by whoever reads it
		}
		counts[t.Status]++
		return putIndexed(idx, k, indexOf(t))
	})
	if err != nil {
		return err
	}
	if err := putTaskCounts(tx, counts); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyTaskIndexed, []byte("1"))
}

// TaskCounts is how many tasks there are in each status.
func (b *Bolt) TaskCounts() (map[task.Status]int, error) {
	var counts map[task.Status]int
	err := b.view(func(tx *bolt.Tx) error {
		var err error
		counts, err = taskCounts(tx)
		return err
	})
	return counts, err
}

// Page is a page of tasks and the cursor of the next one ("" at the end).
type Page struct {
	Tasks []task.Task
	Next  string

	lastKey []byte
}

// TaskFilter narrows a page: to some statuses of the group, and to titles
// holding every word of Query.
type TaskFilter struct {
	Statuses []task.Status
	Query    string
}

func (f TaskFilter) match(value []byte) bool {
	status, title, _ := bytes.Cut(value, []byte{0})
	if len(f.Statuses) > 0 {
		ok := false
		for _, s := range f.Statuses {
			ok = ok || string(status) == string(s)
		}
		if !ok {
			return false
		}
	}
	return holdsWords(title, f.Query)
}

// Matches says whether f lets t through, as a page filtered by f would:
// for the tasks a page does not read from the index (the running ones).
func (f TaskFilter) Matches(t task.Task) bool {
	return (len(f.Statuses) == 0 || slices.Contains(f.Statuses, t.Status)) &&
		holdsWords([]byte(strings.ToLower(t.Title)), f.Query)
}

// holdsWords says whether a lower-cased title holds every word of query,
// in any case.
func holdsWords(title []byte, query string) bool {
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if !bytes.Contains(title, []byte(w)) {
			return false
		}
	}
	return true
}

// TasksInGroup is a page of the tasks in group g, in the page's order,
// after cursor ("" for the first), at most limit (at least 1), that f
// lets through.
func (b *Bolt) TasksInGroup(g Group, f TaskFilter, cursor string, limit int) (Page, error) {
	if !g.Valid() {
		return Page{}, fmt.Errorf("%w: unknown group %q", ErrBadCursor, g)
	}
	prefix := []byte("g" + string(g) + "\x00")
	return b.page(prefix, f, cursor, limit, true)
}

// TasksOf is a page of the tasks sent from chat parent, newest first.
func (b *Bolt) TasksOf(parent string, cursor string, limit int) (Page, error) {
	if parent == "" {
		return Page{Tasks: []task.Task{}}, nil
	}
	return b.page([]byte("p"+parent+"\x00"), TaskFilter{}, cursor, limit, false)
}

// page reads up to limit tasks whose index keys start with prefix, after
// the cursor's key; filtered says the values hold status and title.
func (b *Bolt) page(prefix []byte, f TaskFilter, cursor string, limit int, filtered bool) (Page, error) {
	limit = max(limit, 1)
	var after []byte
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !bytes.HasPrefix(raw, prefix) || len(raw) < len(prefix)+8 {
			return Page{}, ErrBadCursor
		}
		after = raw
	}
	p := Page{Tasks: []task.Task{}}
	err := b.view(func(tx *bolt.Tx) error {
		tasks := tx.Bucket(bucketTasks)
		c := tx.Bucket(bucketTaskIndex).Cursor()
		var k, v []byte
		if after != nil {
			k, v = c.Seek(after)
			if bytes.Equal(k, after) {
				k, v = c.Next()
			}
		} else {
			k, v = c.Seek(prefix)
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if filtered && !f.match(v) {
				continue
			}
			if len(p.Tasks) == limit {
				// There is more: the next page starts after the last one given.
				p.Next = base64.RawURLEncoding.EncodeToString(p.lastKey)
				return nil
			}
			id := k[len(prefix)+8:]
			raw := tasks.Get(id)
			if raw == nil {
				continue // an index entry of a record gone bad
			}
			t, err := decodeTask(id, raw)
			if err != nil {
				continue
			}
			p.Tasks = append(p.Tasks, t)
			p.lastKey = append(p.lastKey[:0], k...)
		}
		return nil
	})
	return p, err
}

// ActiveTasks are the tasks that are not finished: waiting, working and
// needing the person, oldest first in each group.
func (b *Bolt) ActiveTasks() ([]task.Task, error) {
	var out []task.Task
	for _, g := range []Group{GroupNeedsYou, GroupWorking, GroupWaiting} {
		cursor := ""
		for {
			p, err := b.TasksInGroup(g, TaskFilter{}, cursor, 1000)
			if err != nil {
				return nil, err
			}
			out = append(out, p.Tasks...)
			if cursor = p.Next; cursor == "" {
				break
			}
		}
	}
	if out == nil {
		out = []task.Task{}
	}
	return out, nil
}

// FinishedBefore are up to limit finished tasks that ended before cutoff,
// the longest ago first.
func (b *Bolt) FinishedBefore(cutoff time.Time, limit int) ([]task.Task, error) {
	prefix := []byte("g" + string(GroupFinished) + "\x00")
	out := []task.Task{}
	err := b.view(func(tx *bolt.Tx) error {
		tasks := tx.Bucket(bucketTasks)
		c := tx.Bucket(bucketTaskIndex).Cursor()
		// The last key of the group is the one that ended the longest ago.
		end := append(append([]byte(nil), prefix...), 0xff)
		k, _ := c.Seek(end)
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
			if len(k) < len(prefix)+8 {
				continue
			}
			ended := math.MaxUint64 - binary.BigEndian.Uint64(k[len(prefix):])
			if ended >= nanos(cutoff) {
				return nil
			}
			id := k[len(prefix)+8:]
			raw := tasks.Get(id)
			if raw == nil {
				continue
			}
			if t, err := decodeTask(id, raw); err == nil {
				out = append(out, t)
			}
		}
		return nil
	})
	return out, err
}

// UnsettledWorktrees are the helpers whose worktree has not been settled
// (kept or removed) yet: working ones, and any a crash left.
func (b *Bolt) UnsettledWorktrees() ([]task.Task, error) { return b.marked("w\x00") }

// OwedWakes are the finished tasks whose chat still waits for the turn on
// their result (a Conch that stopped owed it).
func (b *Bolt) OwedWakes() ([]task.Task, error) { return b.marked("o\x00") }

// marked are the tasks under one of the index's id-only prefixes.
func (b *Bolt) marked(prefix string) ([]task.Task, error) {
	return recordsUnder(b, bucketTaskIndex, bucketTasks, prefix, decodeTask)
}

// recordsUnder are the records of bucket records whose ids end the keys
// of bucket index under prefix, decoded; one that is gone or cannot be
// decoded is left out.
func recordsUnder[T any](b *Bolt, index, records []byte, prefix string, decode func(k, v []byte) (T, error)) ([]T, error) {
	out := []T{}
	err := b.view(func(tx *bolt.Tx) error {
		recs := tx.Bucket(records)
		c := tx.Bucket(index).Cursor()
		p := []byte(prefix)
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			id := k[len(p):]
			if raw := recs.Get(id); raw != nil {
				if r, err := decode(id, raw); err == nil {
					out = append(out, r)
				}
			}
		}
		return nil
	})
	return out, err
}
