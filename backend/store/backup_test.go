package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A snapshot taken while writers carry on is a whole database of its own,
// its size is known before a byte of it is written, and it holds at least
// every write acknowledged before it began.
func TestBackupToWhileWriting(t *testing.T) {
	s, _ := openTest(t)
	for i := range 50 {
		if err := s.PutTask(newTask(fmt.Sprintf("before-%02d", i), epoch)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.PutTask(newTask(fmt.Sprintf("during-%d-%d", w, i), epoch)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var buf bytes.Buffer
	var told int64 = -1
	n, err := s.BackupTo(func(size int64) (io.Writer, error) { told = size; return &buf, nil })
	close(stop)
	wg.Wait()
	if err != nil || n != told || n != int64(buf.Len()) {
		t.Fatalf("BackupTo = %d, %v; told %d; wrote %d", n, err, told, buf.Len())
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tasks < 50 || got.Schema != SchemaVersion {
		t.Fatalf("the snapshot holds %+v", got)
	}

	// An error from begin writes nothing.
	buf.Reset()
	if _, err := s.BackupTo(func(int64) (io.Writer, error) { return nil, errors.New("no room") }); err == nil || buf.Len() != 0 {
		t.Fatalf("begin failed, yet BackupTo = %v with %d bytes", err, buf.Len())
	}
}

// OpenReadOnly reads a store no Conch has open without changing a byte of
// it, and gives way to one that has it.
func TestOpenReadOnly(t *testing.T) {
	s, path := openTest(t)
	if err := s.PutTask(richTask("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(path); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "in use by another") {
		t.Fatalf("OpenReadOnly of a store in use: %v, want ErrInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := sum(t, path)
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Task("a"); err != nil || got.ID != "a" {
		t.Fatalf("Task = %+v, %v", got, err)
	}
	if err := r.PutTask(richTask("b")); err == nil {
		t.Fatal("a read-only store took a write")
	}
	// Two readers at once are fine; a Conch starting meanwhile is told.
	r2, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	r2.Close()
	if _, err := Open(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("Open while a reader has it: %v, want ErrInUse", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if sum(t, path) != before {
		t.Fatal("reading changed the file")
	}
	if _, err := OpenReadOnly(filepath.Join(t.TempDir(), "none.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenReadOnly of no file: %v", err)
	}
}

// Verify refuses what is not a whole Conch database, each with a reason a
// person can act on, and reads only.
func TestVerifyRefuses(t *testing.T) {
	dir := t.TempDir()
	good, goodPath := openTest(t)
	for i := range 300 {
		if err := good.PutTask(newTask(fmt.Sprintf("t%03d", i), epoch)); err != nil {
			t.Fatal(err)
		}
	}
	var snap bytes.Buffer
	if _, err := good.Backup(&snap); err != nil {
		t.Fatal(err)
	}
	_ = goodPath

	foreign := filepath.Join(dir, "foreign.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		bk, _ := tx.CreateBucket([]byte("widgets"))
		return bk.Put([]byte("k"), []byte("v"))
	})
	db.Close()

	newer := filepath.Join(dir, "newer.db")
	if err := os.WriteFile(newer, snap.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	writeMeta(t, newer, "9")

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path string
		want       error
		says       string
	}{
		{"text", write("notes.txt", []byte("just some notes\n")), ErrNotConch, "not a bbolt database"},
		{"empty", write("empty.db", nil), ErrNotConch, "not a bbolt database"},
		{"random", write("random.db", bytes.Repeat([]byte{0x5a, 0xa5, 0x00, 0xff}, 8192)), ErrNotConch, "not a bbolt database"},
		{"foreign bbolt", foreign, ErrNotConch, "without Conch's schema"},
		{"cut short", write("cut.db", snap.Bytes()[:snap.Len()/2]), ErrCorrupt, "cut short"},
		{"newer", newer, ErrSchemaTooNew, "update Conch"},
	} {
		before := sum(t, tc.path)
		_, err := Verify(tc.path)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Verify = %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
		if sum(t, tc.path) != before {
			t.Errorf("%s: Verify changed the file", tc.name)
		}
	}
	ok := write("ok.db", snap.Bytes())
	got, err := Verify(ok)
	if err != nil || got.Tasks != 300 || got.Schema != SchemaVersion {
		t.Fatalf("Verify of a good snapshot = %+v, %v", got, err)
	}
}

// Hold keeps a starting Conch off a home and refuses one a Conch has.
func TestHold(t *testing.T) {
	s, path := openTest(t)
	if _, err := Hold(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("Hold of a store in use: %v, want ErrInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	release, err := Hold(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Open(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("Open while held: %v, want ErrInUse", err)
	}
	if time.Since(start) < OpenTimeout/2 {
		t.Error("Open gave up before waiting for the lock")
	}
	release()
	s2, err := Open(path)
	if err != nil {
		t.Fatalf("Open after release: %v", err)
	}
	s2.Close()

	none := filepath.Join(t.TempDir(), "conch.db")
	release, err = Hold(none)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Stat(none); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("holding a missing store made one")
	}
}
