package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// A backup is the database as one read transaction sees it (bbolt's
// Tx.WriteTo): consistent while writers carry on, and a valid database file
// by itself. These helpers take one from a running store or from a file no
// Conch has open, check that a file is a whole Conch database before it is
// restored, and keep other Conchs off a home while it is.

// BackupTo writes a consistent snapshot of the whole database while the
// store stays in use. begin is called inside the read transaction with the
// snapshot's exact size (a tar header or a Content-Length needs it first)
// and returns where to write it; an error from begin writes nothing.
func (b *Bolt) BackupTo(begin func(size int64) (io.Writer, error)) (int64, error) {
	var n int64
	err := b.view(func(tx *bolt.Tx) error {
		w, err := begin(tx.Size())
		if err != nil {
			return err
		}
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backup store: %w", err)
	}
	return n, nil
}

// OpenReadOnly opens the Conch database at path for reading only, without
// changing the file (no buckets are made, no version is written). It takes
// bbolt's shared lock, which a running Conch's exclusive lock excludes: when
// a Conch holds the file it fails after OpenTimeout with an error matching
// ErrInUse (the running Conch must then take the backup itself). A file
// that is not a Conch database fails with ErrNotConch, one from a newer
// Conch with ErrSchemaTooNew. Writes to the store it returns fail.
func OpenReadOnly(path string) (*Bolt, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: OpenTimeout})
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, inUse(path)
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("open store %s: %w", path, err)
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch),
			errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrInvalidMapping):
			return nil, fmt.Errorf("open store %s: %w: it is not a bbolt database (%v)", path, ErrNotConch, err)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := db.View(checkConch); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	b := &Bolt{db: db, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go b.write()
	return b, nil
}

// checkConch refuses a database without Conch's schema record (another
// program's bbolt file) or with a newer one, and one without its tasks.
func checkConch(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil || meta.Get(keySchema) == nil {
		return fmt.Errorf("%w: it is a bbolt database without Conch's schema record", ErrNotConch)
	}
	raw := meta.Get(keySchema)
	v, err := strconv.Atoi(string(raw))
	if err != nil || v < 1 {
		return fmt.Errorf("%w: its schema version is %q", ErrNotConch, raw)
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: database has version %d, this Conch knows up to %d; update Conch",
			ErrSchemaTooNew, v, SchemaVersion)
	}
	if tx.Bucket(bucketTasks) == nil {
		return fmt.Errorf("%w: it has no tasks bucket", ErrNotConch)
	}
	return nil
}

// Summary is what Verify found in a database.
type Summary struct {
	Schema        int `json:"schema"`
	Tasks         int `json:"tasks"`
	Conversations int `json:"conversations"`
	Messages      int `json:"messages"`
}

// Verify checks that the file at path is a whole Conch database: bbolt's
// own consistency check over every page, Conch's schema record, and every
// task and conversation decoding. It reads only, like OpenReadOnly, and
// fails with ErrNotConch, ErrCorrupt, ErrSchemaTooNew or ErrInUse.
func Verify(path string) (sum Summary, err error) {
	// bbolt reads its pages straight from the mapped file and trusts them:
	// a page past the end of a cut-short file, or one a damaged pointer
	// names, is a memory fault, not an error. So the file's length is
	// checked against what its header says first, and every page is
	// walked once where a fault is recovered (walk) before bbolt's own
	// check, which runs where it would not be, is let loose on it.
	if err := checkLength(path); err != nil {
		return sum, fmt.Errorf("verify %s: %w", path, err)
	}
	b, err := OpenReadOnly(path)
	if err != nil {
		return sum, err
	}
	defer b.Close()
	err = b.view(func(tx *bolt.Tx) error {
		if err := walk(tx); err != nil {
			return err
		}
		// Check reports from a goroutine of its own until it has looked
		// everywhere: read it all, keep the first few.
		var bad []error
		for e := range tx.Check() {
			if len(bad) < 5 {
				bad = append(bad, e)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%w: the database is damaged: %w", ErrCorrupt, errors.Join(bad...))
		}
		sum.Schema, _ = strconv.Atoi(string(tx.Bucket(bucketMeta).Get(keySchema)))
		if err := tx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
			sum.Tasks++
			_, err := decodeTask(k, v)
			return err
		}); err != nil {
			return err
		}
		if bk := tx.Bucket(bucketConvs); bk != nil {
			if err := bk.ForEach(func(k, v []byte) error {
				sum.Conversations++
				_, err := decodeConversation(k, v)
				return err
			}); err != nil {
				return err
			}
		}
		if bk := tx.Bucket(bucketMsgs); bk != nil {
			sum.Messages = bk.Stats().KeyN
		}
		return nil
	})
	if err != nil {
		return sum, fmt.Errorf("verify %s: %w", path, err)
	}
	return sum, nil
}

// walk touches every key and value of every bucket, nested ones too, so
// that a page out of the file's bounds faults here, where the fault becomes
// an error, rather than in bbolt's check.
func walk(tx *bolt.Tx) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: the database is damaged: %v", ErrCorrupt, v)
		}
	}()
	var sink byte
	var visit func(bk *bolt.Bucket)
	visit = func(bk *bolt.Bucket) {
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			sink ^= k[len(k)-1]
			if v == nil {
				if child := bk.Bucket(k); child != nil {
					visit(child)
				}
				continue
			}
			if len(v) > 0 {
				sink ^= v[0] ^ v[len(v)-1]
			}
		}
	}
	err = tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
		visit(bk)
		return nil
	})
	_ = sink
	return err
}

// bbolt's file header: two meta pages, each a 16-byte page header and then
// magic, version, page size, flags, the root bucket (16 bytes), the
// freelist's page, the high-water page id, the txid and a checksum.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2
	metaOffset  = 16
	metaLength  = 64
)

// checkLength refuses a file shorter than its own meta pages say it is
// (a download or copy cut short), which bbolt would map and fault on.
func checkLength(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	read := func(at int64) (pageSize, hwm, txid uint64, ok bool) {
		buf := make([]byte, metaLength)
		if _, err := f.ReadAt(buf, at+metaOffset); err != nil {
			return 0, 0, 0, false
		}
		ne := binary.NativeEndian
		if ne.Uint32(buf[0:]) != boltMagic || ne.Uint32(buf[4:]) != boltVersion {
			return 0, 0, 0, false
		}
		h := fnv.New64a()
		_, _ = h.Write(buf[:56])
		if h.Sum64() != ne.Uint64(buf[56:]) {
			return 0, 0, 0, false
		}
		return uint64(ne.Uint32(buf[8:])), ne.Uint64(buf[40:]), ne.Uint64(buf[48:]), true
	}
	ps, hwm, txid, ok0 := read(0)
	if !ok0 {
		ps = uint64(os.Getpagesize())
	}
	if ps == 0 || ps > 1<<20 {
		return fmt.Errorf("%w: it is not a bbolt database (its page size is %d)", ErrNotConch, ps)
	}
	ps1, hwm1, txid1, ok1 := read(int64(ps))
	switch {
	case !ok0 && !ok1:
		return fmt.Errorf("%w: it is not a bbolt database (no valid header)", ErrNotConch)
	case !ok0 || (ok1 && txid1 > txid):
		ps, hwm = ps1, hwm1
	}
	if need := hwm * ps; uint64(fi.Size()) < need {
		return fmt.Errorf("%w: the file is cut short: it holds %d bytes of the %d its header says", ErrCorrupt, fi.Size(), need)
	}
	return nil
}

// Hold keeps any Conch from opening the database at path until release is
// called, and fails with an error matching ErrInUse when one has it open
// now. It takes the same shared lock as OpenReadOnly, so it never changes
// the file. A missing file holds nothing (release does nothing): there is
// no Conch on it, and whoever creates one next must not be replaced (see
// a restore's no-replace link). A file bbolt cannot open is held by no
// Conch either, unless the OS names a holder.
func Hold(path string) (release func(), err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: OpenTimeout})
	switch {
	case err == nil:
		return func() { _ = db.Close() }, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, inUse(path)
	case errors.Is(err, fs.ErrNotExist):
		return func() {}, nil
	}
	if _, held := Holder(path); held {
		return nil, inUse(path)
	}
	return func() {}, nil
}
