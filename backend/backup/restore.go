package backup

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"conch/backend/output"
	"conch/backend/search"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// ErrNotBackup is returned by Restore when the file is neither a Conch
// store snapshot nor a tar of one with its logs, or is damaged.
var ErrNotBackup = errors.New("not a Conch backup")

// ErrHomeHasStore is returned by Restore when the home already has a store
// and the restore was not told to replace it.
var ErrHomeHasStore = errors.New("the home already has a store")

// RestoredStep is the step a restored task that was running gets.
const RestoredStep = "Interrupted: restored from a backup taken while it ran"

// RestoreOptions change how Restore treats the home.
type RestoreOptions struct {
	// Replace lets Restore replace a store the home already has; the old
	// file is kept beside it (Restored.Kept).
	Replace bool
	// Now overrides time.Now (tests).
	Now func() time.Time
}

// Restored says what Restore brought back.
type Restored struct {
	Tasks         int
	Interrupted   int // were running or waiting on the person
	Queued        int // start when Conch does
	Conversations int
	Logs          int
	// Kept is where the store that was replaced now is ("" : none was).
	Kept string
}

// format is what a backup file is.
type format int

const (
	formatDB format = iota + 1
	formatTar
)

// sniff tells a store snapshot (bbolt's magic in its first meta page) from a
// tar (ustar at 257) by their first bytes.
func sniff(r io.ReaderAt) (format, error) {
	head := make([]byte, 512)
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	head = head[:n]
	if n >= 20 && binary.NativeEndian.Uint32(head[16:]) == 0xED0CDAED {
		return formatDB, nil
	}
	if n >= 262 && bytes.Equal(head[257:262], []byte("ustar")) {
		return formatTar, nil
	}
	return 0, fmt.Errorf("%w: it is neither a store snapshot (conch backup FILE) nor a tar with the logs (--with-output)", ErrNotBackup)
}

// Restore brings the backup at file back into home. It refuses (an error
// matching store.ErrInUse) while a Conch has the home open, and (with
// ErrHomeHasStore) to replace a store the home has unless opt.Replace.
// The whole file is read and checked in a folder of its own inside the
// home before anything of the home changes; a file that is not a whole
// Conch backup fails with ErrNotBackup and leaves the home untouched (a
// home Restore had to make is removed again). Logs are moved in first and
// the store last, in one rename, so until that rename the home's store is
// the one it had. While Restore runs no Conch can open the home.
func Restore(file, home string, opt RestoreOptions) (Restored, error) {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	var res Restored
	f, kind, err := openBackup(file)
	if err != nil {
		return res, err
	}
	defer f.Close()

	dbPath := filepath.Join(home, DBName)
	release, err := store.Hold(dbPath)
	if err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	held := false
	defer func() {
		if held {
			// A Conch that opened the old file while it was held is
			// still waiting for its lock; outwait it, so it gives up
			// (in use) instead of running on the file that was replaced.
			time.Sleep(store.OpenTimeout + 200*time.Millisecond)
		}
		release()
	}()
	_, statErr := os.Stat(dbPath)
	hadStore := statErr == nil
	if hadStore && !opt.Replace {
		return res, fmt.Errorf("restore: %w (%s); restoring would replace it: pass --replace, and the old one is kept beside it", ErrHomeHasStore, dbPath)
	}

	madeHome := false
	if _, err := os.Stat(home); errors.Is(err, fs.ErrNotExist) {
		madeHome = true
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return res, fmt.Errorf("restore: make the home: %w", err)
	}
	stage, err := os.MkdirTemp(home, ".restore-")
	if err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	defer func() {
		_ = os.RemoveAll(stage)
		if madeHome {
			_ = os.Remove(home) // only if empty: it is when nothing was restored
		}
	}()

	logs, err := unpack(f, kind, file, stage, home, now(), &res)
	if err != nil {
		return res, err
	}
	// From here on the home changes: the logs, then the store.
	if err := moveLogs(stage, home, logs); err != nil {
		return res, err
	}
	held = hadStore
	if res.Kept, err = putStore(filepath.Join(stage, DBName), dbPath, home, hadStore, now); err != nil {
		return res, err
	}
	madeHome = false
	// The search index was of the store just replaced: the next start
	// rebuilds it from the restored one.
	_ = os.RemoveAll(filepath.Join(home, search.DirName))
	syncDir(home)
	return res, nil
}

// openBackup opens file and says which kind of backup it is.
func openBackup(file string) (*os.File, format, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, 0, fmt.Errorf("restore: %w", err)
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("restore: %w", err)
	} else if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("restore: %s is not a file", file)
	}
	kind, err := sniff(f)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("restore %s: %w", file, err)
	}
	return f, kind, nil
}

// unpack puts the backup's store (and a tar's logs) into stage, checks the
// store and heals it as of now; it returns the logs' paths relative to the
// home. Nothing of the home changes yet.
func unpack(f *os.File, kind format, file, stage, home string, now time.Time, res *Restored) ([]string, error) {
	staged := filepath.Join(stage, DBName)
	var logs []string // relative to the home
	var err error
	switch kind {
	case formatDB:
		if err := copyFile(staged, f); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
	case formatTar:
		logs, err = extract(f, stage, true)
		if err != nil {
			return nil, fmt.Errorf("restore %s: %w", file, err)
		}
	}
	sum, err := store.Verify(staged)
	if errors.Is(err, store.ErrSchemaTooNew) {
		return nil, fmt.Errorf("restore %s: it was taken by a newer Conch: %w", file, err)
	}
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w: %w", file, ErrNotBackup, err)
	}
	res.Conversations, res.Logs = sum.Conversations, len(logs)
	if err := heal(staged, stage, home, now, res); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return logs, nil
}

// moveLogs moves the staged logs into the home.
func moveLogs(stage, home string, logs []string) error {
	for _, rel := range logs {
		dst := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return fmt.Errorf("restore %s: %w", rel, err)
		}
		if err := os.Rename(filepath.Join(stage, rel), dst); err != nil {
			return fmt.Errorf("restore %s: %w", rel, err)
		}
	}
	return nil
}

// putStore puts the staged store at dbPath. One the home had is replaced
// and kept beside it, under the name it returns; else the store is linked
// in, which never replaces one a Conch made meanwhile.
func putStore(staged, dbPath, home string, hadStore bool, now func() time.Time) (string, error) {
	if hadStore {
		kept := dbPath + ".before-restore-" + now().UTC().Format("20060102-150405")
		if err := os.Link(dbPath, kept); err != nil {
			return "", fmt.Errorf("restore: keep the store it replaces: %w", err)
		}
		if err := os.Rename(staged, dbPath); err != nil {
			_ = os.Remove(kept)
			return "", fmt.Errorf("restore: %w", err)
		}
		return kept, nil
	}
	if err := os.Link(staged, dbPath); err != nil {
		// A link never replaces: a Conch that started on the home
		// meanwhile keeps its store.
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("restore: a Conch started on %s meanwhile; nothing was replaced: %w", home, err)
		}
		return "", fmt.Errorf("restore: %w", err)
	}
	return "", nil
}

// Contents is what a backup file holds, as Check found it.
type Contents struct {
	store.Summary
	Tar  bool // a tar with the logs, not a snapshot alone
	Logs int
}

// Check reads the backup at file as Restore would, without a home: it is a
// Conch store snapshot, or a tar of one with logs, and the store is whole.
// A tar's store is checked in a temporary folder; its logs are only
// counted.
func Check(file string) (Contents, error) {
	var c Contents
	f, err := os.Open(file)
	if err != nil {
		return c, err
	}
	defer f.Close()
	kind, err := sniff(f)
	if err != nil {
		return c, err
	}
	db := file
	if kind == formatTar {
		c.Tar = true
		dir, err := os.MkdirTemp("", "conch-check-")
		if err != nil {
			return c, err
		}
		defer os.RemoveAll(dir)
		logs, err := extract(f, dir, false)
		if err != nil {
			return c, err
		}
		c.Logs = len(logs)
		db = filepath.Join(dir, DBName)
	}
	c.Summary, err = store.Verify(db)
	if err != nil && !errors.Is(err, store.ErrSchemaTooNew) {
		err = fmt.Errorf("%w: %w", ErrNotBackup, err)
	}
	return c, err
}

// extract reads a backup tar into stage: conch.db once, and output logs at
// tasks/<id>/output.log or chats/<id>/output.log (only named, not written,
// unless keepLogs). Anything else (another program's tar, a path that
// leaves the folder, a link) is refused.
func extract(r io.Reader, stage string, keepLogs bool) ([]string, error) {
	tr := tar.NewReader(r)
	var logs []string
	seenDB, seenManifest := false, false
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: the tar is damaged or cut short: %w", ErrNotBackup, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		name := hdr.Name
		if hdr.Typeflag != tar.TypeReg || hdr.Size < 0 || seen[name] {
			return nil, fmt.Errorf("%w: the tar holds %q, which no Conch backup does", ErrNotBackup, name)
		}
		seen[name] = true
		if seenManifest {
			return nil, fmt.Errorf("%w: the tar goes on after its manifest, with %q", ErrNotBackup, name)
		}
		var dst string
		if name == ManifestName {
			seenManifest = true
			if err := readManifest(tr, hdr.Size, len(logs)); err != nil {
				return nil, err
			}
			continue
		} else if name == DBName {
			seenDB = true
			dst = filepath.Join(stage, DBName)
		} else if isLog(name) {
			logs = append(logs, filepath.FromSlash(name))
			if !keepLogs {
				continue
			}
			dst = filepath.Join(stage, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
				return nil, err
			}
		} else {
			return nil, fmt.Errorf("%w: the tar holds %q, which no Conch backup does", ErrNotBackup, name)
		}
		if err := copyFile(dst, io.LimitReader(tr, hdr.Size)); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%w: the tar is cut short in %s", ErrNotBackup, name)
			}
			return nil, err
		}
	}
	if !seenDB {
		return nil, fmt.Errorf("%w: the tar holds no %s", ErrNotBackup, DBName)
	}
	if !seenManifest {
		return nil, fmt.Errorf("%w: the tar is cut short: it ends before its manifest (%s)", ErrNotBackup, ManifestName)
	}
	return logs, nil
}

// readManifest checks the tar's closing manifest against what came before.
func readManifest(r io.Reader, size int64, logs int) error {
	if size > 64<<10 {
		return fmt.Errorf("%w: its manifest is %d bytes", ErrNotBackup, size)
	}
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(r, size)).Decode(&m); err != nil {
		return fmt.Errorf("%w: its manifest does not read: %w", ErrNotBackup, err)
	}
	if m.Format != 1 {
		return fmt.Errorf("%w: its manifest is of format %d; update Conch", ErrNotBackup, m.Format)
	}
	if m.Logs != logs {
		return fmt.Errorf("%w: the tar is damaged: its manifest names %d logs, it holds %d", ErrNotBackup, m.Logs, logs)
	}
	return nil
}

// isLog reports whether a tar entry's name is an output log's place.
func isLog(name string) bool {
	parts := strings.Split(name, "/")
	if len(parts) != 3 || parts[2] != output.FileName || path.Clean(name) != name {
		return false
	}
	return (parts[0] == "tasks" || parts[0] == "chats") && validID(parts[1])
}

// heal makes the staged store one a Conch can start on: what was running
// or waiting on the person is interrupted (the healing a start after a
// crash does, with its words), and every task's outputBytes is its log's
// real size in the restored home.
func heal(staged, stage, home string, now time.Time, res *Restored) error {
	st, err := store.Open(staged) // ours alone: it is in the staging folder
	if err != nil {
		return err
	}
	tasks, err := st.Tasks()
	if err != nil {
		st.Close()
		return err
	}
	for _, t := range tasks {
		res.Tasks++
		changed := false
		if t.Status.Active() {
			if err := t.SetStatus(task.Interrupted, now); err != nil {
				st.Close()
				return fmt.Errorf("heal task %s: %w", t.ID, err)
			}
			t.Error = taskrun.InterruptedReason
			t.AddStep(RestoredStep)
			res.Interrupted++
			changed = true
		}
		if t.Status == task.Queued {
			res.Queued++
		}
		if size := logSize(stage, home, t.ID); size != t.OutputBytes {
			t.OutputBytes = size
			changed = true
		}
		if changed {
			t.Rev++
			if err := st.PutTask(t); err != nil {
				st.Close()
				return fmt.Errorf("heal task %s: %w", t.ID, err)
			}
		}
	}
	return st.Close()
}

// logSize is how long id's log will be once restored: the one in the
// backup, else the one the home already has, else none.
func logSize(stage, home, id string) int64 {
	for _, root := range []string{stage, home} {
		if fi, err := os.Stat(filepath.Join(root, "tasks", id, output.FileName)); err == nil {
			return fi.Size()
		}
	}
	return 0
}

// copyFile writes r to a new file at dst and syncs it.
func copyFile(dst string, r io.Reader) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncDir makes the renames in dir durable, where the OS allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
