// Package backup takes live backups of a Conch home, restores them, and
// prunes finished tasks past their retention.
//
// A backup is the store as one bbolt read transaction sees it (Tx.WriteTo):
// consistent while tasks run and write, and a database file by itself. With
// the output logs it is a tar: conch.db first, then every task's and chat's
// log (tasks/<id>/output.log, chats/<id>/output.log) as long as it was when
// the snapshot had been taken, or longer (logs only grow), and last a
// manifest (conch-backup.json), without which a tar is cut short.
//
// A restore never brings anything back as running: a task that was running
// or waiting on the person when the snapshot was taken comes back
// interrupted, as after a crash, and can be resumed; queued ones stay
// queued and start when Conch does. It refuses while a Conch has the home,
// checks the whole file before it touches the home, and puts the store in
// place last, in one rename, so a failed or cut-off restore leaves the home
// as it was.
package backup

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"conch/backend/output"
	"conch/backend/store"
)

// DBName is the store's file name inside a home, and the snapshot's name
// inside a tar.
const DBName = "conch.db"

// ManifestName is the last entry of a backup tar, a Manifest.
const ManifestName = "conch-backup.json"

// Manifest closes a backup tar and says what it holds.
type Manifest struct {
	Format  int       `json:"format"` // 1
	TakenAt time.Time `json:"takenAt"`
	Logs    int       `json:"logs"` // the output logs before it
}

// logDirs are the folders of a home that hold output logs, one folder per
// task or chat: <dir>/<id>/output.log.
var logDirs = []string{"tasks", "chats"}

// Source is a home to back up: its open store (a running Conch's, or one
// opened with store.OpenReadOnly) and its folder, where the logs are.
type Source struct {
	Store *store.Bolt
	Home  string
}

// Written says what Write wrote.
type Written struct {
	Bytes int64 // all of it, tar framing included
	Logs  int   // output logs in the tar
}

// FileName is the name to give a backup taken at now: conch-backup-<UTC
// time>.db, or .tar with the logs.
func FileName(withOutput bool, now time.Time) string {
	ext := ".db"
	if withOutput {
		ext = ".tar"
	}
	return "conch-backup-" + now.UTC().Format("20060102-150405") + ext
}

// ContentType is the media type of a backup.
func ContentType(withOutput bool) string {
	if withOutput {
		return "application/x-tar"
	}
	return "application/octet-stream"
}

// Write writes a backup of src to w: the store's snapshot, or with
// withOutput a tar of the snapshot and every output log. begin, when not
// nil, is called once before the first byte with the snapshot's size (the
// whole backup's size when it is the snapshot alone, else -1); an error
// from it writes nothing.
func (src Source) Write(w io.Writer, withOutput bool, begin func(size int64) error) (Written, error) {
	if src.Store == nil {
		return Written{}, errors.New("back up: no store")
	}
	cw := &countWriter{w: w}
	if !withOutput {
		_, err := src.Store.BackupTo(func(size int64) (io.Writer, error) {
			if begin != nil {
				if err := begin(size); err != nil {
					return nil, err
				}
			}
			return cw, nil
		})
		return Written{Bytes: cw.n}, err
	}
	tw := tar.NewWriter(cw)
	now := time.Now()
	_, err := src.Store.BackupTo(func(size int64) (io.Writer, error) {
		if begin != nil {
			if err := begin(-1); err != nil {
				return nil, err
			}
		}
		hdr := &tar.Header{Name: DBName, Mode: 0o600, Size: size, ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		return tw, nil
	})
	if err != nil {
		return Written{Bytes: cw.n}, err
	}
	// The logs are read after the snapshot, so each is at least as long
	// as the store says it is.
	logs, err := src.logs()
	if err != nil {
		return Written{Bytes: cw.n}, err
	}
	n := 0
	for _, rel := range logs {
		ok, err := addLog(tw, filepath.Join(src.Home, rel), filepath.ToSlash(rel))
		if err != nil {
			return Written{Bytes: cw.n, Logs: n}, fmt.Errorf("back up %s: %w", rel, err)
		}
		if ok {
			n++
		}
	}
	// The manifest comes last: a tar cut short anywhere lacks it, even
	// one cut between two entries, which tar itself cannot tell.
	man, err := json.Marshal(Manifest{Format: 1, TakenAt: now.UTC(), Logs: n})
	if err != nil {
		return Written{Bytes: cw.n, Logs: n}, err
	}
	hdr := &tar.Header{Name: ManifestName, Mode: 0o600, Size: int64(len(man)), ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return Written{Bytes: cw.n, Logs: n}, fmt.Errorf("back up: %w", err)
	}
	if _, err := tw.Write(man); err != nil {
		return Written{Bytes: cw.n, Logs: n}, fmt.Errorf("back up: %w", err)
	}
	if err := tw.Close(); err != nil {
		return Written{Bytes: cw.n, Logs: n}, fmt.Errorf("back up: %w", err)
	}
	return Written{Bytes: cw.n, Logs: n}, nil
}

// logs lists the home's output logs, relative to it, in a stable order.
func (src Source) logs() ([]string, error) {
	var rels []string
	for _, dir := range logDirs {
		entries, err := os.ReadDir(filepath.Join(src.Home, dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("back up the logs: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && validID(e.Name()) {
				rels = append(rels, filepath.Join(dir, e.Name(), output.FileName))
			}
		}
	}
	sort.Strings(rels)
	return rels, nil
}

// addLog adds one log as it is now: the length is taken from the open file,
// and only that much is copied, so a log still being written (or deleted
// meanwhile) is cut cleanly. A log that is gone is skipped.
func addLog(tw *tar.Writer, path, name string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, nil
	}
	hdr := &tar.Header{Name: name, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return false, err
	}
	// Logs only grow, so the first Size bytes are there to read.
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return false, err
	}
	return true, nil
}

// validID reports whether name can be a task's or chat's folder: one plain
// path element.
func validID(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 200 {
		return false
	}
	for _, r := range name {
		if r == '/' || r == '\\' || r == 0 {
			return false
		}
	}
	return true
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
