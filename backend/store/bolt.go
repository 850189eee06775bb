package store

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"conch/backend/pref"
	"conch/backend/task"
)

// SchemaVersion is the layout of the buckets this Conch writes. Open refuses
// a database that records a higher version: an older Conch must not rewrite
// records it does not understand.
//
//  1. tasks, conversations, messages, preferences, providers, spend.
//  2. the task index (see taskindex.go), built at Open from the records of
//     a version 1 database.
//  3. the conversation index (see convindex.go), built at Open from the
//     records of an older database.
const SchemaVersion = 3

// OpenTimeout is how long Open waits for another process to release the
// database's file lock before it gives up with ErrInUse.
const OpenTimeout = time.Second

// Bucket and key names. Every bucket is created at Open, so readers never
// meet a missing bucket; new kinds of record (conversations, messages) add a
// name here and use the generic put/del ops.
var (
	bucketMeta  = []byte("meta")
	bucketTasks = []byte("tasks")
	bucketPrefs = []byte("prefs")
	bucketConvs = []byte("conversations")
	// bucketMsgs keys each message by its conversation's id, a zero byte
	// and its big-endian seq, so one conversation's messages are adjacent
	// and in order.
	bucketMsgs = []byte("messages")
	// bucketProviders holds connected providers, without keys;
	// bucketProviderKeys holds their keys when the OS has no keyring.
	bucketProviders    = []byte("providers")
	bucketProviderKeys = []byte("provider-keys")
	// bucketSpend holds what was spent each month ("2026-11" → USD).
	bucketSpend = []byte("spend")

	keySchema = []byte("schema")
	keyPrefs  = []byte("preferences")

	buckets = [][]byte{bucketMeta, bucketTasks, bucketTaskIndex, bucketPrefs, bucketConvs, bucketConvIndex, bucketMsgs, bucketProviders, bucketProviderKeys, bucketSpend, bucketTurns, bucketRoutines, bucketHosts}
)

// Bolt is the bbolt-backed Store. All writes go through one goroutine that
// commits everything pending in a single fsync'd transaction (group commit):
// one fsync costs about as much for fifty records as for one, so concurrent
// writers share it instead of queueing for one each. Reads use their own
// read-only transactions and never wait for the writer.
type Bolt struct {
	db *bolt.DB

	mu      sync.Mutex
	pending []*request // guarded by mu; taken whole by the writer
	closed  bool       // guarded by mu; no request is accepted once set

	wake chan struct{} // capacity 1: "there may be pending requests"
	done chan struct{} // closed when the writer goroutine has returned

	closeOnce sync.Once
	closeErr  error

	// commits counts committed write transactions, so tests can check that
	// concurrent writes really share commits.
	commits atomic.Int64
	// accepted counts requests handed to the writer, so tests can wait until
	// every writer has queued before letting the writer go.
	accepted atomic.Int64
}

var _ Store = (*Bolt)(nil)

// op is one change inside a write request. The ops are generic so that new
// buckets need no new writer code.
type op struct {
	bucket []byte
	key    []byte
	value  []byte // nil for a delete
	del    bool
	// mustExist makes the request fail with ErrNotFound (and apply none of
	// its ops) when key is absent, e.g. deleting an unknown task.
	mustExist bool
	// index keeps the task index (convIndex: the conversation index) in
	// step with the record; entries are the record's index entries (nil
	// for a delete), made by the caller so the writer decodes nothing.
	index     bool
	convIndex bool
	entries   indexed
}

// request is what a caller hands the writer: ops applied together, in order,
// in the same transaction, and the channel its outcome comes back on.
type request struct {
	ops  []op
	err  error
	done chan error
}

// Open opens the database at path (creating it and its directory when
// needed), checks its schema version and starts the writer. When another
// process holds the database it fails after OpenTimeout with an error
// matching ErrInUse rather than hanging; a database from a newer Conch fails
// with ErrSchemaTooNew.
func Open(path string) (*Bolt, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: OpenTimeout, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, inUse(path)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := db.Update(prepare); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	b := &Bolt{
		db:   db,
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	go b.write()
	return b, nil
}

// prepare checks the schema version before touching anything, then creates
// the buckets and records the version on a new database.
func prepare(tx *bolt.Tx) error {
	if meta := tx.Bucket(bucketMeta); meta != nil {
		if raw := meta.Get(keySchema); raw != nil {
			v, err := strconv.Atoi(string(raw))
			if err != nil {
				return fmt.Errorf("read schema version %q: %w", raw, err)
			}
			if v > SchemaVersion {
				return fmt.Errorf("%w: database has version %d, this Conch knows up to %d; update Conch",
					ErrSchemaTooNew, v, SchemaVersion)
			}
		}
	}
	for _, name := range buckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if meta.Get(keyTaskIndexed) == nil {
		if err := buildTaskIndex(tx); err != nil {
			return fmt.Errorf("index the tasks: %w", err)
		}
	}
	if meta.Get(keyConvIndexed) == nil {
		if err := buildConvIndex(tx); err != nil {
			return fmt.Errorf("index the conversations: %w", err)
		}
	}
	if v, _ := strconv.Atoi(string(meta.Get(keySchema))); v < SchemaVersion {
		if err := meta.Put(keySchema, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return fmt.Errorf("write schema version: %w", err)
		}
	}
	return nil
}

// Task returns the task with id, or an error matching ErrNotFound.
func (b *Bolt) Task(id string) (task.Task, error) {
	var t task.Task
	err := b.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketTasks).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		var err error
		t, err = decodeTask([]byte(id), v)
		return err
	})
	if err != nil {
		return task.Task{}, fmt.Errorf("get task %s: %w", id, err)
	}
	return t, nil
}

// Tasks returns every task, oldest (CreatedAt, then ID) first. When some
// records cannot be decoded it returns the others together with an error
// matching ErrCorrupt that names every bad record, so a caller that wants to
// salvage can.
func (b *Bolt) Tasks() ([]task.Task, error) {
	// Never nil, so an empty list encodes as [] rather than null.
	ts := []task.Task{}
	var bad []error
	err := b.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
			t, err := decodeTask(k, v)
			if err != nil {
				bad = append(bad, err)
				return nil
			}
			ts = append(ts, t)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	slices.SortFunc(ts, func(a, b task.Task) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(bad) > 0 {
		return ts, fmt.Errorf("list tasks: %d unreadable: %w", len(bad), errors.Join(bad...))
	}
	return ts, nil
}

// PutTask writes t under t.ID; when it returns nil, t is durable.
func (b *Bolt) PutTask(t task.Task) error {
	if t.ID == "" {
		return errors.New("put task: empty id")
	}
	v, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("put task %s: encode: %w", t.ID, err)
	}
	if err := b.submit(op{bucket: bucketTasks, key: []byte(t.ID), value: v, index: true, entries: indexOf(t)}); err != nil {
		return fmt.Errorf("put task %s: %w", t.ID, err)
	}
	return nil
}

// PutTasks writes every task of ts in one transaction (all or none): a
// seed, or one task's end stored with the next one's start.
func (b *Bolt) PutTasks(ts []task.Task) error {
	ops := make([]op, 0, len(ts))
	for _, t := range ts {
		if t.ID == "" {
			return errors.New("put tasks: empty id")
		}
		v, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("put task %s: encode: %w", t.ID, err)
		}
		ops = append(ops, op{bucket: bucketTasks, key: []byte(t.ID), value: v, index: true, entries: indexOf(t)})
	}
	if err := b.submit(ops...); err != nil {
		return fmt.Errorf("put %d tasks: %w", len(ts), err)
	}
	return nil
}

// DeleteTask removes the task with id durably, or returns an error matching
// ErrNotFound when there is none.
func (b *Bolt) DeleteTask(id string) error {
	if id == "" {
		return fmt.Errorf("delete task %q: %w", id, ErrNotFound)
	}
	if err := b.submit(op{bucket: bucketTasks, key: []byte(id), del: true, mustExist: true, index: true}); err != nil {
		return fmt.Errorf("delete task %s: %w", id, err)
	}
	return nil
}

// Preferences returns the stored preferences, or pref.Defaults() when none
// were saved. Fields missing from the stored value (added by a later
// version) keep their defaults.
func (b *Bolt) Preferences() (pref.Preferences, error) {
	p := pref.Defaults()
	err := b.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketPrefs).Get(keyPrefs)
		if v == nil {
			return nil
		}
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		return nil
	})
	if err != nil {
		return pref.Preferences{}, fmt.Errorf("get preferences: %w", err)
	}
	return p, nil
}

// PutPreferences saves p durably after checking it with p.Validate, so a
// later start never reads limits the engine cannot run with.
func (b *Bolt) PutPreferences(p pref.Preferences) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("put preferences: %w", err)
	}
	v, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("put preferences: encode: %w", err)
	}
	if err := b.submit(op{bucket: bucketPrefs, key: keyPrefs, value: v}); err != nil {
		return fmt.Errorf("put preferences: %w", err)
	}
	return nil
}

// PreferencesOrDefaults is Preferences, or pref.Defaults() when they
// cannot be read: for readers that must go on (prices, topics).
func (b *Bolt) PreferencesOrDefaults() pref.Preferences {
	p, err := b.Preferences()
	if err != nil {
		return pref.Defaults()
	}
	return p
}

// Path is the database file's path.
func (b *Bolt) Path() string { return b.db.Path() }

// Backup writes a consistent copy of the whole database to w while the store
// stays in use, and returns the bytes written.
func (b *Bolt) Backup(w io.Writer) (int64, error) {
	return b.BackupTo(func(int64) (io.Writer, error) { return w, nil })
}

// Close stops accepting writes, waits until every write already accepted has
// committed, and closes the database. It is safe to call more than once;
// later calls return the first call's result.
func (b *Bolt) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		b.signal()
		<-b.done
		if err := b.db.Close(); err != nil {
			b.closeErr = fmt.Errorf("close store: %w", err)
		}
	})
	return b.closeErr
}

// view runs fn in a read-only transaction. Reading a closed database reports
// ErrClosed, the same as writing one.
func (b *Bolt) view(fn func(*bolt.Tx) error) error {
	err := b.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// submit queues ops as one request and blocks until the transaction holding
// it has committed (or failed).
func (b *Bolt) submit(ops ...op) error {
	for _, o := range ops {
		if err := o.check(); err != nil {
			return err
		}
	}
	r := &request{ops: ops, done: make(chan error, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.pending = append(b.pending, r)
	b.accepted.Add(1)
	b.mu.Unlock()
	b.signal()
	return <-r.done
}

// signal wakes the writer without blocking: one buffered token is enough,
// because the writer takes everything pending each time it wakes.
func (b *Bolt) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// write is the writer goroutine. Each time it wakes it takes every pending
// request at once, commits them in one transaction and answers them all;
// requests that arrive meanwhile form the next group.
func (b *Bolt) write() {
	defer close(b.done)
	for range b.wake {
		b.mu.Lock()
		group := b.pending
		b.pending = nil
		closed := b.closed
		b.mu.Unlock()
		if len(group) > 0 {
			b.commit(group)
		}
		if closed {
			// Close set closed under mu before signalling, so this group
			// held every request that will ever be accepted.
			return
		}
	}
}

// commit applies group in order in one Update transaction and answers every
// request. A request whose precondition fails (ErrNotFound) is answered with
// that error and skipped without spoiling the others. If an op fails
// outright, the transaction is rolled back, that request alone is answered
// with the error, and the rest are retried without it.
func (b *Bolt) commit(group []*request) {
	for len(group) > 0 {
		bad := -1
		var badErr error
		err := b.db.Update(func(tx *bolt.Tx) error {
			counts := &countsTx{}
			defer func() { counts.tx = nil }()
			for i, r := range group {
				r.err = nil
				if err := r.precheck(tx); err != nil {
					r.err = err
					continue
				}
				for _, o := range r.ops {
					if err := o.apply(tx, counts); err != nil {
						bad, badErr = i, err
						return err
					}
				}
			}
			return counts.flush()
		})
		if bad >= 0 {
			group[bad].done <- badErr
			group = slices.Delete(group, bad, bad+1)
			continue
		}
		if err == nil {
			b.commits.Add(1)
		} else {
			err = fmt.Errorf("commit: %w", err)
		}
		for _, r := range group {
			if r.err != nil {
				r.done <- r.err
			} else {
				r.done <- err
			}
		}
		return
	}
}

// check refuses an op that bbolt would refuse, before it reaches the writer,
// so one bad request rarely costs the group a rollback.
func (o op) check() error {
	switch {
	case len(o.key) == 0:
		return errors.New("empty key")
	case len(o.key) > bolt.MaxKeySize:
		return fmt.Errorf("key of %d bytes is longer than %d", len(o.key), bolt.MaxKeySize)
	case !o.del && int64(len(o.value)) > bolt.MaxValueSize:
		return fmt.Errorf("value of %d bytes is longer than %d", len(o.value), int64(bolt.MaxValueSize))
	}
	return nil
}

// precheck tests every mustExist op before any op of r is applied, so a
// failed request leaves nothing behind.
func (r *request) precheck(tx *bolt.Tx) error {
	for _, o := range r.ops {
		if !o.mustExist {
			continue
		}
		bk := tx.Bucket(o.bucket)
		if bk == nil || bk.Get(o.key) == nil {
			return ErrNotFound
		}
	}
	return nil
}

func (o op) apply(tx *bolt.Tx, counts *countsTx) error {
	bk := tx.Bucket(o.bucket)
	if bk == nil {
		return fmt.Errorf("bucket %s does not exist", o.bucket)
	}
	var err error
	if o.del {
		err = bk.Delete(o.key)
	} else {
		err = bk.Put(o.key, o.value)
	}
	if err != nil || (!o.index && !o.convIndex) {
		return err
	}
	var now *indexed
	if !o.del {
		now = &o.entries
	}
	if o.convIndex {
		return indexConversation(tx, o.key, now)
	}
	return indexTask(tx, counts, o.key, now)
}

// decodeTask decodes a stored task value. A value that is not a task, or a
// task stored under another id's key, is an error (never a panic), so one
// damaged record is reported instead of taking Conch down.
func decodeTask(key, value []byte) (task.Task, error) {
	var t task.Task
	if err := json.Unmarshal(value, &t); err != nil {
		return task.Task{}, fmt.Errorf("decode task %q: %w: %w", key, ErrCorrupt, err)
	}
	if !bytes.Equal([]byte(t.ID), key) {
		return task.Task{}, fmt.Errorf("decode task %q: %w: record says id %q", key, ErrCorrupt, t.ID)
	}
	return t, nil
}
