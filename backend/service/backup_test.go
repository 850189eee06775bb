package service

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/backup"
	"conch/backend/errcode"
	"conch/backend/store"
	"conch/backend/task"
)

// SaveBackup puts a backup that reads back into the folder it was given;
// WriteBackup tells its receiver what comes before the first byte.
func TestSaveAndWriteBackup(t *testing.T) {
	home := t.TempDir()
	st, err := store.Open(filepath.Join(home, backup.DBName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutTask(task.Task{ID: "a", Kind: task.Background, Status: task.Done, Steps: []string{}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := New(Config{Backup: &backup.Source{Store: st, Home: home}, BackupDir: dir})
	for _, withOutput := range []bool{false, true} {
		saved, err := s.SaveBackup(withOutput)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(saved.Path) != dir || saved.Tar != withOutput || !strings.HasPrefix(saved.Name, "conch-backup-") {
			t.Fatalf("SaveBackup = %+v", saved)
		}
		c, err := backup.Check(saved.Path)
		if err != nil || c.Tasks != 1 || c.Tar != withOutput {
			t.Fatalf("the saved backup reads %+v, %v", c, err)
		}
		if fi, _ := os.Stat(saved.Path); fi.Size() != saved.Bytes {
			t.Fatalf("it says %d bytes, the file has %d", saved.Bytes, fi.Size())
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".conch-backup-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	var buf bytes.Buffer
	var got BackupStream
	if err := WriteBackup(s, false, func(b BackupStream) (io.Writer, error) { got = b; return &buf, nil }); err != nil {
		t.Fatal(err)
	}
	if got.Size != int64(buf.Len()) || got.ContentType != "application/octet-stream" || !strings.HasSuffix(got.Name, ".db") {
		t.Fatalf("WriteBackup told %+v and wrote %d bytes", got, buf.Len())
	}
	if err := WriteBackup(s, true, func(b BackupStream) (io.Writer, error) { got = b; return io.Discard, nil }); err != nil || got.Size != -1 || !strings.HasSuffix(got.Name, ".tar") {
		t.Fatalf("WriteBackup with the logs told %+v, %v", got, err)
	}
	if err := WriteBackup(s, true, func(BackupStream) (io.Writer, error) { return failing{}, nil }); !errors.Is(err, ErrBackupBrokeOff) {
		t.Fatalf("a receiver that fails: %v, want ErrBackupBrokeOff", err)
	}

	none := New(Config{})
	if _, err := none.SaveBackup(false); errcode.Of(err) != errcode.NotFound {
		t.Fatalf("SaveBackup with no store: %v", err)
	}
	if err := WriteBackup(none, false, func(BackupStream) (io.Writer, error) { t.Fatal("begun"); return nil, nil }); errcode.Of(err) != errcode.NotFound {
		t.Fatalf("WriteBackup with no store: %v", err)
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }
