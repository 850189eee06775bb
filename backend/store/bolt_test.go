package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"conch/backend/pref"
	"conch/backend/task"
)

// openTest opens a fresh store in t's temporary directory and closes it when
// the test ends. It returns the path so tests can reopen the same file.
func openTest(t testing.TB) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conch.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

// reopen closes s and opens path again, as a restart would.
func reopen(t *testing.T, s *Bolt, path string) *Bolt {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s2.Close() })
	return s2
}

var epoch = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newTask(id string, created time.Time) task.Task {
	return task.Task{
		ID:        id,
		Kind:      "background",
		Status:    "queued",
		Title:     "task " + id,
		Text:      "do " + id,
		Steps:     []string{},
		CreatedAt: created,
	}
}

// richTask fills pointer and nested fields so round trips cover them.
func richTask(id string) task.Task {
	t := newTask(id, epoch)
	started := epoch.Add(time.Second)
	code := 2
	t.Status = "failed"
	t.Steps = []string{"Read main.go", "Ran go test"}
	t.Error = "tests failed"
	t.StartedAt = &started
	t.EndedAt = &started
	t.ExitCode = &code
	t.Result = &task.Result{Text: "no", Source: "exit", At: started}
	t.OutputBytes = 1234
	t.Notified = true
	t.Rev = 7
	return t
}

func TestPutGetDeleteList(t *testing.T) {
	s, _ := openTest(t)

	if ts, err := s.Tasks(); err != nil || len(ts) != 0 || ts == nil {
		t.Fatalf("Tasks on empty store = %#v, %v; want empty non-nil", ts, err)
	}
	want := richTask("a")
	if err := s.PutTask(want); err != nil {
		t.Fatalf("PutTask: %v", err)
	}
	got, err := s.Task("a")
	if err != nil {
		t.Fatalf("Task: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Task = %+v\nwant %+v", got, want)
	}

	// Overwrite.
	want.Rev++
	want.Summary = "changed"
	if err := s.PutTask(want); err != nil {
		t.Fatalf("PutTask again: %v", err)
	}
	if got, _ := s.Task("a"); got.Rev != want.Rev || got.Summary != "changed" {
		t.Fatalf("after overwrite Task = %+v", got)
	}

	if err := s.PutTask(newTask("b", epoch)); err != nil {
		t.Fatalf("PutTask b: %v", err)
	}
	if ts, err := s.Tasks(); err != nil || len(ts) != 2 {
		t.Fatalf("Tasks = %d tasks, %v; want 2", len(ts), err)
	}

	if err := s.DeleteTask("a"); err != nil {
		t.Fatalf("DeleteTask: %v", err)
	}
	if _, err := s.Task("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Task after delete: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteTask("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second DeleteTask: err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteTask(""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeleteTask(\"\"): err = %v, want ErrNotFound", err)
	}
	if err := s.PutTask(task.Task{}); err == nil {
		t.Fatal("PutTask with empty id succeeded")
	}
	if ts, _ := s.Tasks(); len(ts) != 1 || ts[0].ID != "b" {
		t.Fatalf("Tasks after delete = %+v", ts)
	}
}

func TestNotFoundErrorsNameTheTask(t *testing.T) {
	s, _ := openTest(t)
	_, err := s.Task("missing-id")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "missing-id") {
		t.Fatalf("Task(missing) err = %v; want ErrNotFound naming the id", err)
	}
}

func TestTasksSortedByCreatedAtThenID(t *testing.T) {
	s, _ := openTest(t)
	// Keys sort c < d < z in bbolt; the wanted order differs from that.
	in := []task.Task{
		newTask("z", epoch),
		newTask("c", epoch.Add(2*time.Minute)),
		newTask("d", epoch),
		newTask("a", epoch.Add(time.Minute)),
	}
	for _, tk := range in {
		if err := s.PutTask(tk); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := s.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range ts {
		ids = append(ids, tk.ID)
	}
	if got, want := strings.Join(ids, ","), "d,z,a,c"; got != want {
		t.Fatalf("order = %s, want %s", got, want)
	}
}

func TestPreferences(t *testing.T) {
	s, path := openTest(t)
	p, err := s.Preferences()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, pref.Defaults()) {
		t.Fatalf("Preferences on new store = %+v, want defaults", p)
	}
	want := pref.Preferences{Limits: pref.Limits{Background: 5, Helper: 2}}
	if err := s.PutPreferences(want); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPreferences(pref.Preferences{}); err == nil {
		t.Fatal("PutPreferences accepted zero limits")
	}
	s = reopen(t, s, path)
	if p, err := s.Preferences(); err != nil || !reflect.DeepEqual(p, want) {
		t.Fatalf("Preferences after reopen = %+v, %v; want %+v", p, err, want)
	}
}

func TestPreferencesMissingFieldsKeepDefaults(t *testing.T) {
	s, _ := openTest(t)
	// As if written by a version that had no helper limit yet.
	if err := s.submit(op{bucket: bucketPrefs, key: keyPrefs, value: []byte(`{"limits":{"background":9}}`)}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Preferences()
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.Background != 9 || p.Limits.Helper != pref.Defaults().Limits.Helper {
		t.Fatalf("Preferences = %+v", p)
	}
}

func TestReopenFindsEverything(t *testing.T) {
	s, path := openTest(t)
	var want []task.Task
	for i := range 20 {
		tk := richTask(fmt.Sprintf("t%02d", i))
		tk.CreatedAt = epoch.Add(time.Duration(i) * time.Second)
		want = append(want, tk)
		if err := s.PutTask(tk); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteTask("t05"); err != nil {
		t.Fatal(err)
	}
	want = append(want[:5], want[6:]...)
	prefs := pref.Preferences{Limits: pref.Limits{Background: 1, Helper: 1}}
	if err := s.PutPreferences(prefs); err != nil {
		t.Fatal(err)
	}

	s = reopen(t, s, path)
	got, err := s.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen Tasks = %d tasks, want %d (or contents differ)", len(got), len(want))
	}
	if p, err := s.Preferences(); err != nil || !reflect.DeepEqual(p, prefs) {
		t.Fatalf("after reopen Preferences = %+v, %v", p, err)
	}
}

// TestConcurrentPutTaskDurable has 50 goroutines write at once; every write
// that returned nil must be there after a restart, and the writes must have
// shared commits.
func TestConcurrentPutTaskDurable(t *testing.T) {
	s, path := openTest(t)
	const writers, each = 50, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%02d-%02d", w, i)
				if err := s.PutTask(newTask(id, epoch)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("PutTask: %v", err)
	}
	commits := s.commits.Load()
	t.Logf("%d writes in %d commits", writers*each, commits)
	if commits >= writers*each {
		t.Errorf("%d writes took %d commits; group commit did not group", writers*each, commits)
	}

	s = reopen(t, s, path)
	ts, err := s.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != writers*each {
		t.Fatalf("after reopen %d tasks, want %d", len(ts), writers*each)
	}
	for w := range writers {
		for i := range each {
			if _, err := s.Task(fmt.Sprintf("w%02d-%02d", w, i)); err != nil {
				t.Fatalf("after reopen: %v", err)
			}
		}
	}
}

// holdWriter blocks the writer goroutine's next transaction by holding
// bbolt's single write lock, and returns the function that lets it go.
func holdWriter(t *testing.T, s *Bolt) (release func()) {
	t.Helper()
	tx, err := s.db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitAccepted waits until n requests have been handed to the writer.
func waitAccepted(t *testing.T, s *Bolt, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.accepted.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d requests queued", s.accepted.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommitGroups makes the grouping deterministic: while the writer
// is stuck, 50 writes queue up; they must then go out in two commits (the
// group the writer already held, and everything else).
func TestGroupCommitGroups(t *testing.T) {
	s, _ := openTest(t)
	release := holdWriter(t, s)
	const writers = 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			if err := s.PutTask(newTask(fmt.Sprintf("g%02d", w), epoch)); err != nil {
				t.Errorf("PutTask: %v", err)
			}
		})
	}
	waitAccepted(t, s, writers)
	release()
	wg.Wait()
	if got := s.commits.Load(); got != 2 {
		t.Fatalf("50 queued writes took %d commits, want 2", got)
	}
	if ts, _ := s.Tasks(); len(ts) != writers {
		t.Fatalf("%d tasks stored, want %d", len(ts), writers)
	}
}

// TestGroupFailuresStayAlone checks that one request's failure inside a group
// reaches only that request: the others in the same group commit.
func TestGroupFailuresStayAlone(t *testing.T) {
	s, _ := openTest(t)
	if err := s.PutTask(newTask("first", epoch)); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, s)
	before := s.accepted.Load()

	results := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	run := func(name string, fn func() error) {
		wg.Go(func() {
			err := fn()
			mu.Lock()
			results[name] = err
			mu.Unlock()
		})
	}
	run("delete missing", func() error { return s.DeleteTask("nope") })
	run("bad bucket", func() error {
		return s.submit(op{bucket: []byte("no-such-bucket"), key: []byte("k"), value: []byte("v")})
	})
	run("put", func() error { return s.PutTask(newTask("second", epoch)) })
	run("delete first", func() error { return s.DeleteTask("first") })
	waitAccepted(t, s, before+4)
	release()
	wg.Wait()

	if err := results["delete missing"]; !errors.Is(err, ErrNotFound) {
		t.Errorf("delete missing: %v, want ErrNotFound", err)
	}
	if err := results["bad bucket"]; err == nil || !strings.Contains(err.Error(), "no-such-bucket") {
		t.Errorf("bad bucket: %v, want an error naming the bucket", err)
	}
	if err := results["put"]; err != nil {
		t.Errorf("put: %v", err)
	}
	if err := results["delete first"]; err != nil {
		t.Errorf("delete first: %v", err)
	}
	if _, err := s.Task("second"); err != nil {
		t.Errorf("second not stored: %v", err)
	}
	if _, err := s.Task("first"); !errors.Is(err, ErrNotFound) {
		t.Errorf("first not deleted: %v", err)
	}
}

func TestSchemaVersion(t *testing.T) {
	s, path := openTest(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := readMeta(t, path), strconv.Itoa(SchemaVersion); got != want {
		t.Fatalf("schema version = %q, want %s", got, want)
	}

	writeMeta(t, path, strconv.Itoa(SchemaVersion+1))
	_, err := Open(path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of newer schema: err = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "version "+strconv.Itoa(SchemaVersion+1)) || !strings.Contains(err.Error(), path) {
		t.Errorf("error does not say which file and version: %v", err)
	}
	if got := readMeta(t, path); got != strconv.Itoa(SchemaVersion+1) {
		t.Fatalf("refused open changed the schema to %q", got)
	}

	writeMeta(t, path, "banana")
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "schema version") {
		t.Fatalf("Open of unreadable schema: err = %v", err)
	}
}

func readMeta(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	db.View(func(tx *bolt.Tx) error {
		v = string(tx.Bucket(bucketMeta).Get(keySchema))
		return nil
	})
	return v
}

func writeMeta(t *testing.T, path, version string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchema, []byte(version))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestClosed(t *testing.T) {
	s, _ := openTest(t)
	if err := s.PutTask(newTask("a", epoch)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	checks := map[string]error{
		"PutTask":        s.PutTask(newTask("b", epoch)),
		"DeleteTask":     s.DeleteTask("a"),
		"PutPreferences": s.PutPreferences(pref.Defaults()),
	}
	_, checks["Task"] = s.Task("a")
	_, checks["Tasks"] = s.Tasks()
	_, checks["Preferences"] = s.Preferences()
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", name, err)
		}
	}
}

// TestCloseWaitsForPendingWrites closes while writes are queued: each write
// either committed (and survives a reopen) or was refused with ErrClosed.
func TestCloseWaitsForPendingWrites(t *testing.T) {
	s, path := openTest(t)
	release := holdWriter(t, s)
	const writers = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok []string
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("c%02d", w)
			err := s.PutTask(newTask(id, epoch))
			switch {
			case err == nil:
				mu.Lock()
				ok = append(ok, id)
				mu.Unlock()
			case !errors.Is(err, ErrClosed):
				t.Errorf("PutTask %s: %v", id, err)
			}
		})
	}
	waitAccepted(t, s, writers)
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	// Close must not finish while writes it accepted are still held up.
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before pending writes committed", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(ok) != writers {
		t.Fatalf("%d of %d queued writes committed", len(ok), writers)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, id := range ok {
		if _, err := s2.Task(id); err != nil {
			t.Errorf("acknowledged write lost: %v", err)
		}
	}
}

func TestSecondOpenFailsClearly(t *testing.T) {
	_, path := openTest(t)
	start := time.Now()
	s2, err := Open(path)
	if err == nil {
		s2.Close()
		t.Fatal("second Open of a database in use succeeded")
	}
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Open: err = %v, want ErrInUse", err)
	}
	// It names the home and, where the OS says, the process that has it.
	want := filepath.Dir(path) + " is in use by another "
	if runtime.GOOS == "linux" {
		want += fmt.Sprintf("Conch, process %d (", os.Getpid())
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error is not clear: %v (want %q)", err, want)
	}
	if took := time.Since(start); took > OpenTimeout+5*time.Second {
		t.Errorf("second Open took %v", took)
	}
}

func TestCorruptValueIsAnError(t *testing.T) {
	s, _ := openTest(t)
	if err := s.PutTask(newTask("good", epoch)); err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"broken":   []byte(`{"id":"broken","kind":`),
		"wrongkey": []byte(`{"id":"someone-else"}`),
		"notjson":  {0xff, 0x00, 0x13},
	}
	for k, v := range bad {
		if err := s.submit(op{bucket: bucketTasks, key: []byte(k), value: v}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Task(k); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), k) {
			t.Errorf("Task(%s): err = %v, want ErrCorrupt naming it", k, err)
		}
	}
	ts, err := s.Tasks()
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("Tasks with corrupt values: err = %v, want ErrCorrupt", err)
	}
	for k := range bad {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("Tasks error does not name %s: %v", k, err)
		}
	}
	if len(ts) != 1 || ts[0].ID != "good" {
		t.Errorf("Tasks salvaged %+v, want just the good task", ts)
	}
	if _, err := s.Task("good"); err != nil {
		t.Errorf("a good task next to corrupt ones: %v", err)
	}
}

func TestBackup(t *testing.T) {
	s, _ := openTest(t)
	if err := s.PutTask(richTask("a")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := s.Backup(&buf)
	if err != nil || n != int64(buf.Len()) || n == 0 {
		t.Fatalf("Backup = %d, %v (buffer %d)", n, err, buf.Len())
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(copyPath, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Open(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Task("a"); err != nil || !reflect.DeepEqual(got, richTask("a")) {
		t.Fatalf("task from backup = %+v, %v", got, err)
	}
}

func FuzzTaskDecode(f *testing.F) {
	f.Add([]byte("a"), []byte(`{"id":"a","status":"queued","createdAt":"2026-11-30T09:00:00Z"}`))
	f.Add([]byte("a"), []byte(`{"id":"a","steps":null,"result":{"text":1}}`))
	f.Add([]byte("b"), []byte(`{"id":"a"}`))
	f.Add([]byte(""), []byte(`null`))
	f.Add([]byte("x"), []byte{0xff, '{'})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		tk, err := decodeTask(key, value)
		if err != nil {
			return
		}
		if tk.ID != string(key) {
			t.Fatalf("decoded id %q under key %q", tk.ID, key)
		}
	})
}

func TestHolderNamesTheProcessThatHasTheDatabase(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/locks is Linux's")
	}
	path := filepath.Join(t.TempDir(), "conch.db")
	if _, ok := Holder(path); ok {
		t.Fatal("a holder for a file that does not exist")
	}
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if pid, ok := Holder(path); !ok || pid != os.Getpid() {
		t.Fatalf("holder %d %v, want this process %d", pid, ok, os.Getpid())
	}
	_ = b.Close()
	if pid, ok := Holder(path); ok {
		t.Fatalf("closed, yet held by %d", pid)
	}
}
