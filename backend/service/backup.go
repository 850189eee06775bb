package service

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"conch/backend/backup"
	"conch/backend/errcode"
)

// BackupSaved says where SaveBackup put a backup.
type BackupSaved struct {
	// Path is the file on this computer; Name its base name.
	Path  string `json:"path"`
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	// Tar is true when it holds the output logs too.
	Tar bool `json:"tar"`
}

func (s *Service) backup() (*backup.Source, error) {
	if s.cfg.Backup == nil || s.cfg.Backup.Store == nil {
		return nil, errUnavailable("Backups")
	}
	return s.cfg.Backup, nil
}

// SaveBackup writes a live backup of the store, with the output logs when
// withOutput (a tar), into the person's Downloads folder, and says where.
// It is how the window takes one; a browser downloads GET /api/backup.
func (s *Service) SaveBackup(withOutput bool) (BackupSaved, error) {
	src, err := s.backup()
	if err != nil {
		return BackupSaved{}, err
	}
	dir := s.cfg.BackupDir
	if dir == "" {
		dir = downloads()
	}
	name := backup.FileName(withOutput, time.Now())
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, ".conch-backup-*")
	if err != nil {
		return BackupSaved{}, fmt.Errorf("save a backup in %s: %w", dir, err)
	}
	w, err := src.Write(tmp, withOutput, nil)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return BackupSaved{}, fmt.Errorf("save a backup in %s: %w", dir, err)
	}
	return BackupSaved{Path: path, Name: name, Bytes: w.Bytes, Tar: withOutput}, nil
}

// downloads is the person's Downloads folder ($XDG_DOWNLOAD_DIR, else
// ~/Downloads), or their home folder when there is none.
func downloads() string {
	if d := os.Getenv("XDG_DOWNLOAD_DIR"); d != "" {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return os.TempDir()
	}
	if d := filepath.Join(home, "Downloads"); isDir(d) {
		return d
	}
	return home
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// BackupStream is a backup about to be streamed: what to call it and how
// big it is (-1 when unknown, as a tar's is).
type BackupStream struct {
	Name        string
	ContentType string
	Size        int64
}

// ErrBackupBrokeOff is returned by WriteBackup when the backup failed after
// its first bytes were written: the receiver holds a partial file and must
// be told so (a gateway aborts the response).
var ErrBackupBrokeOff = errors.New("the backup broke off")

// WriteBackup streams a live backup of the store from api (a *Service),
// with the output logs when withOutput. begin is called once, before the
// first byte, with what is coming, and returns where to write it; an error
// before then (no backups here, a closed store) comes back as it is and
// nothing was written. It is a function, not a method, so the window does
// not bind it: a Writer cannot cross into the page.
func WriteBackup(api API, withOutput bool, begin func(BackupStream) (io.Writer, error)) error {
	s, ok := api.(*Service)
	if !ok {
		return errcode.New(errcode.NotFound, "Backups are not available here")
	}
	src, err := s.backup()
	if err != nil {
		return err
	}
	var out io.Writer
	started := false
	_, err = src.Write(writerFunc(func(p []byte) (int, error) { return out.Write(p) }), withOutput, func(size int64) error {
		w, err := begin(BackupStream{Name: backup.FileName(withOutput, time.Now()), ContentType: backup.ContentType(withOutput), Size: size})
		out, started = w, err == nil
		return err
	})
	if err != nil && started {
		return fmt.Errorf("%w: %w", ErrBackupBrokeOff, err)
	}
	return err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
