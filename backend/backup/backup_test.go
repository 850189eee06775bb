package backup_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"conch/backend/backup"
	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/provider/shell"
	"conch/backend/search"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// home is a real home: a bbolt store, its logs and a runner of real shell
// commands.
type home struct {
	dir    string
	work   string // the commands' folder
	store  *store.Bolt
	bus    *event.Bus
	logs   *output.Logs
	runner *taskrun.Runner
}

// startHome opens (or makes) a home at dir with prefs and starts its runner.
func startHome(t *testing.T, dir string, prefs *pref.Preferences) *home {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, backup.DBName))
	if err != nil {
		t.Fatal(err)
	}
	if prefs != nil {
		if err := st.PutPreferences(*prefs); err != nil {
			t.Fatal(err)
		}
	}
	h := &home{dir: dir, work: t.TempDir(), store: st, bus: event.NewBus(), logs: output.New(filepath.Join(dir, "tasks"))}
	h.runner = taskrun.New(taskrun.Config{
		Store: st, Bus: h.bus, Logs: h.logs, Home: h.work, HomeMark: "backup-test-" + filepath.Base(dir),
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: h.work, Grace: 300 * time.Millisecond}},
	})
	if err := h.runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	return h
}

func (h *home) close() {
	h.runner.Stop()
	h.bus.Close()
	_ = h.store.Close()
}

func (h *home) create(t *testing.T, text string, mode task.Mode) task.Task {
	t.Helper()
	tk, err := h.runner.Create(taskrun.CreateRequest{Text: text, Options: taskrun.Options{Mode: string(mode), Cwd: h.work}})
	if err != nil {
		t.Fatalf("create %q: %v", text, err)
	}
	return tk
}

// waitFor polls the runner until ok holds for the task.
func (h *home) waitFor(t *testing.T, id, what string, ok func(task.Task) bool) task.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tk, err := h.runner.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never became %s: %s %q", id, what, tk.Status, tk.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *home) backup(t *testing.T, withOutput bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), backup.FileName(withOutput, time.Now()))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (backup.Source{Store: h.store, Home: h.dir}).Write(f, withOutput, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A loop that prints until it is stopped.
const chatty = `for i in $(seq 1 100000); do echo "line $i"; sleep 0.02; done`

// Twenty tasks run (and print) while the backup is taken, two wait on the
// person, two wait in line and two have finished. Restored into a fresh
// home, every one is there and none is running: the running and asking
// ones are interrupted with the healing's words, the queued ones stay
// queued, and the tar brings every log back, each as long as its task
// says.
func TestBackupWhileTwentyTasksRunRestoresNothingRunning(t *testing.T) {
	prefs := pref.Defaults()
	prefs.Limits.Background = 20
	h := startHome(t, t.TempDir(), &prefs)

	var done []task.Task
	for i := range 2 {
		tk := h.create(t, fmt.Sprintf("echo finished-%d", i), task.Auto)
		done = append(done, h.waitFor(t, tk.ID, "done", func(t task.Task) bool { return t.Status == task.Done }))
	}
	var asking []task.Task
	for i := range 2 {
		tk := h.create(t, fmt.Sprintf("touch asked-%d", i), task.Ask)
		asking = append(asking, h.waitFor(t, tk.ID, "needs-you", func(t task.Task) bool { return t.Status == task.NeedsYou }))
	}
	var running []task.Task
	for range 20 {
		running = append(running, h.create(t, chatty, task.Auto))
	}
	var queued []task.Task
	for range 2 {
		queued = append(queued, h.create(t, chatty, task.Auto))
	}
	for _, tk := range running {
		h.waitFor(t, tk.ID, "running with output", func(t task.Task) bool {
			size, _ := h.logs.Size(t.ID)
			return t.Status == task.Running && size > 0
		})
	}
	for _, tk := range queued {
		if got, _ := h.runner.Get(tk.ID); got.Status != task.Queued {
			t.Fatalf("the 21st and 22nd tasks should wait: %s", got.Status)
		}
	}

	tarPath := h.backup(t, true)
	dbPath := h.backup(t, false)
	// Still running after the backups: they did not stop anything.
	for _, tk := range running {
		if got, _ := h.runner.Get(tk.ID); got.Status != task.Running {
			t.Fatalf("task %s is %s after the backup", tk.ID, got.Status)
		}
	}
	h.close()

	for _, tc := range []struct {
		name, file string
		logs       bool
	}{{"tar", tarPath, true}, {"db", dbPath, false}} {
		t.Run(tc.name, func(t *testing.T) {
			fresh := filepath.Join(t.TempDir(), "restored")
			res, err := backup.Restore(tc.file, fresh, backup.RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Tasks != 26 || res.Interrupted != 22 || res.Queued != 2 || res.Kept != "" {
				t.Fatalf("Restore = %+v, want 26 tasks, 22 interrupted, 2 queued", res)
			}
			// The two asked tasks never ran their command: they printed
			// nothing, so they have no log.
			if tc.logs && res.Logs != 22 {
				t.Fatalf("the tar brought %d logs back, want one per task that printed (22)", res.Logs)
			}
			if entries, _ := filepath.Glob(filepath.Join(fresh, ".restore-*")); len(entries) != 0 {
				t.Fatalf("staging left behind: %v", entries)
			}
			st, err := store.Open(filepath.Join(fresh, backup.DBName))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			tasks, err := st.Tasks()
			if err != nil || len(tasks) != 26 {
				t.Fatalf("restored store has %d tasks, %v", len(tasks), err)
			}
			byID := map[string]task.Task{}
			for _, tk := range tasks {
				byID[tk.ID] = tk
				if tk.Status.Active() {
					t.Errorf("task %s came back %s", tk.ID, tk.Status)
				}
				size := int64(0)
				if fi, err := os.Stat(filepath.Join(fresh, "tasks", tk.ID, output.FileName)); err == nil {
					size = fi.Size()
				} else if tc.logs && tk.OutputBytes > 0 {
					t.Errorf("task %s (%s, %d bytes printed) has no log after a restore with the logs", tk.ID, tk.Status, tk.OutputBytes)
				}
				if tk.OutputBytes != size {
					t.Errorf("task %s says %d bytes of output, its log has %d", tk.ID, tk.OutputBytes, size)
				}
			}
			for _, tk := range append(append([]task.Task{}, running...), asking...) {
				got := byID[tk.ID]
				if got.Status != task.Interrupted || got.Error != taskrun.InterruptedReason || got.EndedAt == nil ||
					got.Ask != nil || got.Steps[len(got.Steps)-1] != backup.RestoredStep {
					t.Errorf("task %s came back %s %q ask=%v steps=%v", tk.ID, got.Status, got.Error, got.Ask, got.Steps)
				}
				if got.Rev <= tk.Rev {
					t.Errorf("task %s rev %d did not move on from %d", tk.ID, got.Rev, tk.Rev)
				}
			}
			for _, tk := range queued {
				if got := byID[tk.ID]; got.Status != task.Queued {
					t.Errorf("queued task came back %s", got.Status)
				}
			}
			for _, tk := range done {
				if got := byID[tk.ID]; got.Status != task.Done || got.EndedAt == nil || !got.EndedAt.Equal(*tk.EndedAt) {
					t.Errorf("finished task came back %s ended %v", got.Status, got.EndedAt)
				}
			}
			if tc.logs {
				b, err := os.ReadFile(filepath.Join(fresh, "tasks", running[0].ID, output.FileName))
				if err != nil || !strings.HasPrefix(string(b), "line 1\n") {
					t.Errorf("a restored log reads %.40q, %v", b, err)
				}
			}
		})
	}
}

// The restored home is one a Conch starts on: nothing runs or is healed
// again, and the queued tasks start.
func TestARestoredHomeStarts(t *testing.T) {
	h := startHome(t, t.TempDir(), nil)
	tk := h.create(t, chatty, task.Auto)
	h.waitFor(t, tk.ID, "running", func(t task.Task) bool { return t.Status == task.Running })
	file := h.backup(t, true)
	h.close()

	fresh := filepath.Join(t.TempDir(), "home")
	if _, err := backup.Restore(file, fresh, backup.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	r := startHome(t, fresh, nil)
	got, err := r.runner.Get(tk.ID)
	if err != nil || got.Status != task.Interrupted || got.Steps[len(got.Steps)-1] != backup.RestoredStep {
		t.Fatalf("after a start: %s %v (%v)", got.Status, got.Steps, err)
	}
	again, err := r.runner.Retry(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, again.ID, "running again", func(t task.Task) bool { return t.Status == task.Running })
}

func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A home with a store is replaced only when asked, the old store kept
// beside it; a home a Conch has open is refused, untouched.
func TestRestoreRefusesAHeldHomeAndReplacesOnlyWhenAsked(t *testing.T) {
	src := startHome(t, t.TempDir(), nil)
	want := src.create(t, "echo from-the-backup", task.Auto)
	src.waitFor(t, want.ID, "done", func(t task.Task) bool { return t.Status == task.Done })
	file := src.backup(t, true)
	src.close()

	dir := t.TempDir()
	held := startHome(t, dir, nil)
	other := held.create(t, "echo already-here", task.Auto)
	held.waitFor(t, other.ID, "done", func(t task.Task) bool { return t.Status == task.Done })
	dbPath := filepath.Join(dir, backup.DBName)

	_, err := backup.Restore(file, dir, backup.RestoreOptions{Replace: true})
	if !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "in use by another Conch") {
		t.Fatalf("Restore into a held home: %v, want ErrInUse", err)
	}
	if got, err := held.store.Task(other.ID); err != nil || got.ID != other.ID {
		t.Fatalf("the running home lost its task: %v", err)
	}
	if _, err := held.store.Task(want.ID); err == nil {
		t.Fatal("the backup's task reached the running home")
	}
	if _, err := os.Stat(filepath.Join(dir, "tasks", want.ID)); err == nil {
		t.Fatal("the backup's log reached the running home")
	}
	held.close()

	before := digest(t, dbPath)
	// The replaced store's search index: a restore leaves it to be rebuilt.
	index := filepath.Join(dir, search.DirName)
	if err := os.MkdirAll(filepath.Join(index, "index"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(file, dir, backup.RestoreOptions{}); !errors.Is(err, backup.ErrHomeHasStore) || !strings.Contains(err.Error(), "--replace") {
		t.Fatalf("Restore over a store without Replace: %v", err)
	}
	if digest(t, dbPath) != before {
		t.Fatal("a refused restore changed the store")
	}

	res, err := backup.Restore(file, dir, backup.RestoreOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept == "" || digest(t, res.Kept) != before {
		t.Fatalf("the replaced store is not kept as it was: %q", res.Kept)
	}
	if _, err := os.Stat(index); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the replaced store's search index is still there: %v", err)
	}
	st, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Task(want.ID); err != nil {
		t.Fatalf("the restored store lacks the backup's task: %v", err)
	}
	if _, err := st.Task(other.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the restored store still has the replaced one's task: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tasks", want.ID, output.FileName)); string(b) != "from-the-backup\n" {
		t.Fatalf("restored log %q", b)
	}
}

// tarOf writes a tar of the given entries (name → content; a nil content
// is a symlink), closed with a manifest as Write does.
func tarOf(t *testing.T, entries ...any) string {
	t.Helper()
	logs := 0
	for i := 0; i < len(entries); i += 2 {
		if name := entries[i].(string); strings.HasPrefix(name, "tasks/") || strings.HasPrefix(name, "chats/") {
			logs++
		}
	}
	entries = append(entries, backup.ManifestName, []byte(fmt.Sprintf(`{"format":1,"logs":%d}`, logs)))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i < len(entries); i += 2 {
		name := entries[i].(string)
		body, _ := entries[i+1].([]byte)
		hdr := &tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if entries[i+1] == nil {
			hdr = &tar.Header{Name: name, Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("b%d.tar", len(entries)))
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// What is not a whole Conch backup is refused with a reason, and the home
// is as it was: a fresh one is not even made, an existing one keeps its
// store byte for byte and gains no log.
func TestRestoreRefusesWhatIsNotAWholeBackup(t *testing.T) {
	src := startHome(t, t.TempDir(), nil)
	tk := src.create(t, "echo hi", task.Auto)
	src.waitFor(t, tk.ID, "done", func(t task.Task) bool { return t.Status == task.Done })
	good, err := os.ReadFile(src.backup(t, false))
	if err != nil {
		t.Fatal(err)
	}
	goodTar, err := os.ReadFile(src.backup(t, true))
	if err != nil {
		t.Fatal(err)
	}
	src.close()

	write := func(name string, b []byte) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	foreign := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err })
	db.Close()
	log := []byte("hello\n")

	// The first block that names the manifest (its own header, or the
	// PAX header before it) starts where the entries before it end.
	between := goodTar[:bytes.Index(goodTar, []byte(backup.ManifestName))/512*512]

	cases := []struct {
		name, file, says string
	}{
		{"text", write("notes.txt", []byte("dear diary\n")), "neither a store snapshot"},
		{"foreign bbolt", foreign, "without Conch's schema"},
		{"cut-short snapshot", write("cut.db", good[:len(good)/2]), "cut short"},
		{"cut-short tar", write("cut.tar", goodTar[:len(goodTar)-2048]), "cut short"},
		{"a tar cut between entries", write("between.tar", between), "ends before its manifest"},
		{"tar without a store", tarOf(t, "tasks/a/output.log", log), "holds no conch.db"},
		{"another program's tar", tarOf(t, "conch.db", good, "etc/passwd", log), `"etc/passwd"`},
		{"a tar that climbs out", tarOf(t, "conch.db", good, "tasks/../../evil/output.log", log), "which no Conch backup does"},
		{"a tar with a link", tarOf(t, "conch.db", good, "tasks/a/output.log", nil), "which no Conch backup does"},
		{"a tar of a foreign db", tarOf(t, "conch.db", []byte(strings.Repeat("x", 8192))), "not a bbolt database"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh := filepath.Join(t.TempDir(), "fresh")
			_, err := backup.Restore(tc.file, fresh, backup.RestoreOptions{})
			if !errors.Is(err, backup.ErrNotBackup) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Restore = %v, want ErrNotBackup saying %q", err, tc.says)
			}
			if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("a refused restore left a home behind")
			}
			if _, err := backup.Check(tc.file); !errors.Is(err, backup.ErrNotBackup) {
				t.Fatalf("Check = %v, want ErrNotBackup", err)
			}

			existing := t.TempDir()
			h := startHome(t, existing, nil)
			mine := h.create(t, "echo mine", task.Auto)
			h.waitFor(t, mine.ID, "done", func(t task.Task) bool { return t.Status == task.Done })
			h.close()
			before := digest(t, filepath.Join(existing, backup.DBName))
			_, err = backup.Restore(tc.file, existing, backup.RestoreOptions{Replace: true})
			if !errors.Is(err, backup.ErrNotBackup) {
				t.Fatalf("Restore over a home = %v", err)
			}
			if digest(t, filepath.Join(existing, backup.DBName)) != before {
				t.Fatal("a refused restore changed the store")
			}
			entries, _ := os.ReadDir(existing)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if strings.Join(names, " ") != "conch.db tasks" {
				t.Fatalf("the home holds %v after a refused restore", names)
			}
			logs, _ := os.ReadDir(filepath.Join(existing, "tasks"))
			if len(logs) != 1 || logs[0].Name() != mine.ID {
				t.Fatalf("the home's logs are %v", logs)
			}
		})
	}
}

// The tar carries the chats' logs too.
func TestTheTarCarriesChatLogs(t *testing.T) {
	h := startHome(t, t.TempDir(), nil)
	chats := output.New(filepath.Join(h.dir, "chats"))
	w, err := chats.Open("chat-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "a chat's tool output\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	file := h.backup(t, true)
	c, err := backup.Check(file)
	if err != nil || !c.Tar || c.Logs != 1 {
		t.Fatalf("Check = %+v, %v", c, err)
	}
	fresh := filepath.Join(t.TempDir(), "h")
	if _, err := backup.Restore(file, fresh, backup.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(fresh, "chats", "chat-1", output.FileName)); string(b) != "a chat's tool output\n" {
		t.Fatalf("restored chat log %q", b)
	}
}

// ago is a time days days before now.
func ago(now time.Time, days int) *time.Time {
	at := now.Add(-time.Duration(days) * 24 * time.Hour)
	return &at
}

// Retention prunes finished tasks that ended longer ago than it says, with
// their logs, announcing each; their chats stay. Newer ones, unfinished
// ones, a running one however old its last end, and a helper whose
// worktree holds work stay.
func TestRetentionPrunesOnlyOldFinishedTasks(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	st, err := store.Open(filepath.Join(dir, backup.DBName))
	if err != nil {
		t.Fatal(err)
	}
	logs := output.New(filepath.Join(dir, "tasks"))
	mk := func(id string, status task.Status, ended *time.Time, edit ...func(*task.Task)) task.Task {
		tk := task.Task{ID: id, Kind: task.Background, Status: status, Title: id, Text: "echo " + id, Provider: "shell",
			Mode: task.Auto, Cwd: dir, Steps: []string{}, CreatedAt: now.Add(-400 * 24 * time.Hour), EndedAt: ended}
		for _, e := range edit {
			e(&tk)
		}
		if err := st.PutTask(tk); err != nil {
			t.Fatal(err)
		}
		w, err := logs.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(w, "output of", id)
		w.Close()
		return tk
	}
	chat := conversation.Conversation{ID: "chat-of-old", Title: "old", Origin: conversation.Origin{Kind: conversation.FromTask, TaskID: "old-done"},
		Mode: task.Auto, CreatedAt: now, UpdatedAt: now, Rev: 1}
	if err := st.PutConversation(chat); err != nil {
		t.Fatal(err)
	}
	mk("old-done", task.Done, ago(now, 100), func(t *task.Task) { t.ConversationID = chat.ID })
	mk("old-failed", task.Failed, ago(now, 91))
	mk("old-stopped", task.Stopped, ago(now, 365))
	mk("old-interrupted", task.Interrupted, ago(now, 200))
	mk("new-done", task.Done, ago(now, 89))
	mk("old-queued", task.Queued, nil)
	mk("old-kept-worktree", task.Done, ago(now, 300), func(t *task.Task) {
		t.Kind = task.Helper
		t.Worktree = &task.Worktree{Path: filepath.Join(dir, "worktrees", "x"), Branch: "conch/x", Kept: true}
	})
	mk("old-again", task.Done, ago(now, 300), func(t *task.Task) { t.Text = "sleep 30" })
	st.Close()

	prefs := pref.Defaults()
	prefs.Limits.Background = 5
	h := startHome(t, dir, &prefs)
	sub := h.bus.Subscribe(64)
	defer sub.Close()
	if _, err := h.runner.Retry("old-again"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "old-again", "running", func(t task.Task) bool { return t.Status == task.Running })

	current := prefs
	unstarted := backup.NewPruner(backup.PruneConfig{Tasks: h.runner, Preferences: func() pref.Preferences { return current }})
	unstarted.Stop() // safe before Start
	unstarted.Stop()
	p := backup.NewPruner(backup.PruneConfig{Tasks: h.runner, Preferences: func() pref.Preferences { return current }, Every: time.Hour})
	current.RetentionDays = 0
	if pruned, err := p.Prune(); err != nil || len(pruned) != 0 {
		t.Fatalf("retention 0 pruned %v, %v", pruned, err)
	}
	current.RetentionDays = 90
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"old-done": true, "old-failed": true, "old-stopped": true, "old-interrupted": true}
	deleted := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(deleted) < len(want) {
		select {
		case e := <-sub.C():
			if e.Type == event.TaskDeleted {
				deleted[e.ID] = true
			}
		case <-timeout:
			t.Fatalf("task.deleted only for %v", deleted)
		}
	}
	p.Stop()
	p.Stop()
	if err := p.Start(context.Background()); err == nil {
		t.Fatal("a stopped pruner started again")
	}
	for id := range deleted {
		if !want[id] {
			t.Errorf("pruned %s", id)
		}
	}
	tasks, _ := h.store.Tasks()
	left := map[string]task.Task{}
	for _, tk := range tasks {
		left[tk.ID] = tk
	}
	for _, id := range []string{"new-done", "old-queued", "old-kept-worktree", "old-again"} {
		if _, ok := left[id]; !ok {
			t.Errorf("%s was pruned", id)
		}
		if _, err := os.Stat(logs.Path(id)); err != nil && id != "old-queued" {
			t.Errorf("%s lost its log: %v", id, err)
		}
	}
	for id := range want {
		if _, ok := left[id]; ok {
			t.Errorf("%s is still listed", id)
		}
		if _, err := h.store.Task(id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s is still stored: %v", id, err)
		}
		if _, err := os.Stat(filepath.Dir(logs.Path(id))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s's log is still there: %v", id, err)
		}
	}
	if _, err := h.store.Conversation(chat.ID); err != nil {
		t.Fatalf("the pruned task's chat went with it: %v", err)
	}
	if left["old-again"].Status != task.Running {
		t.Fatalf("the running task is %s", left["old-again"].Status)
	}
}

func TestExpired(t *testing.T) {
	now := time.Now()
	cutoff := *ago(now, 90)
	for _, tc := range []struct {
		name string
		t    task.Task
		want bool
	}{
		{"old done", task.Task{Status: task.Done, EndedAt: ago(now, 91)}, true},
		{"old failed", task.Task{Status: task.Failed, EndedAt: ago(now, 91)}, true},
		{"old stopped", task.Task{Status: task.Stopped, EndedAt: ago(now, 91)}, true},
		{"old interrupted", task.Task{Status: task.Interrupted, EndedAt: ago(now, 91)}, true},
		{"new done", task.Task{Status: task.Done, EndedAt: ago(now, 89)}, false},
		{"running", task.Task{Status: task.Running, EndedAt: ago(now, 91)}, false},
		{"needs you", task.Task{Status: task.NeedsYou, EndedAt: ago(now, 91)}, false},
		{"queued", task.Task{Status: task.Queued}, false},
		{"finished without an end", task.Task{Status: task.Done}, false},
		{"kept worktree", task.Task{Status: task.Done, EndedAt: ago(now, 91), Worktree: &task.Worktree{Kept: true}}, false},
		{"removed worktree", task.Task{Status: task.Done, EndedAt: ago(now, 91), Worktree: &task.Worktree{}}, true},
	} {
		if got := backup.Expired(tc.t, cutoff); got != tc.want {
			t.Errorf("%s: Expired = %v, want %v", tc.name, got, tc.want)
		}
	}
}
