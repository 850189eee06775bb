package backup_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/backup"
	"conch/backend/internal/quantity"
	"conch/backend/store"
	"conch/backend/task"
)

var env = backup.Env{Home: func(flag string) (string, error) { return filepath.Abs(flag) }}

func run(cmd func([]string, *bytes.Buffer, *bytes.Buffer) int, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cmd(args, &out, &errb)
	return code, out.String(), errb.String()
}

func backupCmd(args []string, out, errb *bytes.Buffer) int {
	return backup.BackupCommand(args, out, errb, env)
}
func restoreCmd(args []string, out, errb *bytes.Buffer) int {
	return backup.RestoreCommand(args, out, errb, env)
}

// With no Conch on the home, conch backup reads the store itself and
// changes nothing of it; conch restore brings it back elsewhere.
func TestBackupAndRestoreCommands(t *testing.T) {
	h := startHome(t, t.TempDir(), nil)
	tk := h.create(t, "echo hello", task.Auto)
	h.waitFor(t, tk.ID, "done", func(t task.Task) bool { return t.Status == task.Done })
	h.close()
	dbPath := filepath.Join(h.dir, backup.DBName)
	before := digest(t, dbPath)

	out := t.TempDir()
	for _, tc := range []struct {
		file  string
		flags []string
		says  string
	}{
		{"b.db", nil, "1 task, 0 chats"},
		{"b.tar", []string{"--with-output"}, "1 task, 0 chats, 1 output log"},
	} {
		file := filepath.Join(out, tc.file)
		args := append([]string{file, "--home", h.dir}, tc.flags...)
		code, stdout, stderr := run(backupCmd, args...)
		if code != 0 || !strings.Contains(stdout, "Backed up "+h.dir+" to "+file+": "+tc.says) || !strings.Contains(stdout, "conch restore") {
			t.Fatalf("conch backup %v = %d\n%s%s", args, code, stdout, stderr)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("backup file %v, %v: want it readable by the person alone", fi.Mode(), err)
		} else if want := "(" + quantity.Bytes(fi.Size()) + ")."; !strings.Contains(stdout, want) || !strings.HasSuffix(want, "iB).") {
			t.Fatalf("conch backup said %q, want the size in binary units as doctor says it, %s", stdout, want)
		}
		fresh := filepath.Join(t.TempDir(), "home")
		code, stdout, stderr = run(restoreCmd, file, "--home", fresh)
		if code != 0 || !strings.Contains(stdout, "Restored "+file+" into "+fresh+": 1 task") {
			t.Fatalf("conch restore = %d\n%s%s", code, stdout, stderr)
		}
		st, err := store.Open(filepath.Join(fresh, backup.DBName))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Task(tk.ID); err != nil {
			t.Fatal(err)
		}
		st.Close()
		// Again, over what is there now: only with --replace.
		if code, _, stderr := run(restoreCmd, file, "--home", fresh); code != 1 || !strings.Contains(stderr, "--replace") {
			t.Fatalf("a second restore = %d %s", code, stderr)
		}
		if code, stdout, _ := run(restoreCmd, "--replace", file, "--home", fresh); code != 0 || !strings.Contains(stdout, "kept as "+filepath.Join(fresh, "conch.db.before-restore-")) {
			t.Fatalf("restore --replace = %d %s", code, stdout)
		}
	}
	if digest(t, dbPath) != before {
		t.Fatal("conch backup changed the store it read")
	}
	if left, _ := filepath.Glob(filepath.Join(out, ".conch-backup-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{}, 2, "Usage"},
		{[]string{filepath.Join(out, "x.tar"), "--home", h.dir}, 1, "add --with-output"},
		{[]string{filepath.Join(out, "x.db"), "--with-output", "--home", h.dir}, 1, "name it .tar"},
		{[]string{filepath.Join(out, "x.db"), "--home", t.TempDir()}, 1, "there is no Conch home at"},
		{[]string{out, "--home", h.dir}, 1, "is a folder"},
	} {
		if code, _, stderr := run(backupCmd, tc.args...); code != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("conch backup %v = %d %q, want %d saying %q", tc.args, code, stderr, tc.code, tc.says)
		}
	}
	if code, _, stderr := run(restoreCmd, filepath.Join(out, "none.db"), "--home", t.TempDir()); code != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("restore of a missing file = %d %q", code, stderr)
	}
}

// While a Conch has the home, conch backup asks it (its gateway, with the
// home's token) and checks what it got; conch restore refuses.
func TestBackupCommandAsksTheRunningConch(t *testing.T) {
	h := startHome(t, t.TempDir(), nil)
	tk := h.create(t, chatty, task.Auto)
	h.waitFor(t, tk.ID, "running", func(t task.Task) bool { return t.Status == task.Running })
	file := filepath.Join(t.TempDir(), "b.db")

	code, _, stderr := run(backupCmd, file, "--home", h.dir)
	if code != 1 || !strings.Contains(stderr, "in use by a running Conch") || !strings.Contains(stderr, "Settings → Backup") {
		t.Fatalf("backup with no gateway to ask = %d %q", code, stderr)
	}

	const token = "sign-in-token"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/backup" || r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"error":{"code":"unauthorized","message":"Sign in."}}`, http.StatusUnauthorized)
			return
		}
		withOutput := r.URL.Query().Get("output") == "1"
		_, _ = (backup.Source{Store: h.store, Home: h.dir}).Write(w, withOutput, nil)
	}))
	defer srv.Close()
	if err := os.WriteFile(filepath.Join(h.dir, "gateway-url"), []byte(srv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, "gateway-token"), []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(backupCmd, file, "--home", h.dir); code != 1 || !strings.Contains(stderr, "it answered 401: Sign in.") {
		t.Fatalf("backup with a wrong token = %d %q", code, stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatal("a refused backup left a file")
	}
	if err := os.WriteFile(filepath.Join(h.dir, "gateway-token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{file}, {file + ".tar", "--with-output"}} {
		code, stdout, stderr := run(backupCmd, append(args, "--home", h.dir)...)
		if code != 0 || !strings.Contains(stdout, "Asked the running Conch at "+srv.URL) || !strings.Contains(stdout, ": 1 task") {
			t.Fatalf("backup from the running Conch = %d\n%s%s", code, stdout, stderr)
		}
	}

	code, _, stderr = run(restoreCmd, file, "--home", h.dir, "--replace")
	if code != 1 || !strings.Contains(stderr, "in use by another Conch") || !strings.Contains(stderr, "quit that Conch") {
		t.Fatalf("restore into the running home = %d %q", code, stderr)
	}
}
