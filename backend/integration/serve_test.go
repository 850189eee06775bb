package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/testrig/conchserve"
)

var bin string

func TestMain(m *testing.M) {
	// CONCH_IT_BIN runs the tests against another build (an older one, to
	// see a test fail before its fix).
	if b := os.Getenv("CONCH_IT_BIN"); b != "" {
		bin = b
		code := m.Run()
		removeSeeded()
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "conch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "conch")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build conch:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	removeSeeded()
	os.Exit(code)
}

type server struct {
	cmd   *exec.Cmd
	base  string
	token string
}

// start runs `conch serve` on a free loopback port and reads its URL.
func start(t testing.TB, home string) *server { t.Helper(); return startWith(t, home, nil) }

// startWith is start with env added to the test's environment.
func startWith(t testing.TB, home string, env []string) *server {
	t.Helper()
	s := conchserve.Start(t, bin, []string{"serve", "--home", home, "--addr", "127.0.0.1:0"}, env)
	return &server{cmd: s.Cmd, base: s.Base, token: s.Token}
}

func (s *server) call(t testing.TB, method, path, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, _ := http.NewRequest(method, s.base+path, rd)
	r.Header.Set("Authorization", "Bearer "+s.token)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if s, ok := out.(*string); ok {
			*s = string(b)
		} else if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func (s *server) waitTask(t testing.TB, id string, ok func(task.Task) bool) task.Task {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var tk task.Task
		s.call(t, "GET", "/api/tasks/"+id, "", &tk)
		if ok(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: gave up waiting; last %+v", id, tk)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServePrintsSignInURLAndGuardsTheToken(t *testing.T) {
	home := t.TempDir()
	s := start(t, home)
	fi, err := os.Stat(filepath.Join(home, "gateway-token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	resp, err := http.Get(s.base + "/api/tasks")
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("no token: %v %v", resp, err)
	}
	// The page is served to anyone on loopback, and sets no cookie: the
	// token stays in the link's fragment and the page's own storage.
	resp, err = http.Get(s.base + "/")
	if err != nil || resp.StatusCode == 401 || len(resp.Cookies()) != 0 {
		t.Fatalf("the page: %v %v", resp, err)
	}
	var list struct {
		Tasks []task.Task `json:"tasks"`
	}
	if code := s.call(t, "GET", "/api/tasks", "", &list); code != 200 {
		t.Fatalf("with the token: %d", code)
	}
}

// A Conch killed with kill -9 while a task runs: after a restart the task is
// interrupted, what it started is gone, and its output is still there.
func TestKill9WhileRunningThenRestart(t *testing.T) {
	home := t.TempDir()
	work := t.TempDir()
	s := start(t, home)
	var tk task.Task
	body := fmt.Sprintf(`{"text":"sleep 300 & echo started; wait","options":{"mode":"auto","cwd":%q}}`, work)
	if code := s.call(t, "POST", "/api/tasks", body, &tk); code != 201 {
		t.Fatalf("create: %d", code)
	}
	running := s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status == task.Running && t.OutputBytes > 0 })
	if running.Pid == 0 {
		t.Fatal("running task has no recorded process group")
	}
	if n := marked(tk.ID); n == 0 {
		t.Fatal("no process of the task found")
	}

	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()

	s2 := start(t, home)
	got := s2.waitTask(t, tk.ID, func(task.Task) bool { return true })
	if got.Status != task.Interrupted || got.Error != taskrun.InterruptedReason {
		t.Fatalf("after restart: %s %q", got.Status, got.Error)
	}
	deadline := time.Now().Add(5 * time.Second)
	for marked(tk.ID) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the task outlived Conch", marked(tk.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var out string
	if code := s2.call(t, "GET", "/api/tasks/"+tk.ID+"/output", "", &out); code != 200 || out != "started\n" {
		t.Fatalf("output after restart: %d %q", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(home, "tasks", tk.ID, "output.log")); err != nil || string(b) != "started\n" {
		t.Fatalf("log on disk: %q %v", b, err)
	}
	// The doctor, asked through the running Conch, warns about it.
	doc := exec.Command(bin, "doctor", "--home", home)
	docOut, err := doc.CombinedOutput()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, docOut)
	}
	for _, want := range []string{"Asked the running Conch at " + s2.base, "warn  Tasks", "1 task was interrupted when Conch stopped", "Interrupted: sleep 300 & echo started; wait"} {
		if !strings.Contains(string(docOut), want) {
			t.Fatalf("doctor output lacks %q:\n%s", want, docOut)
		}
	}
	// Try again runs it from the start on the new server.
	if code := s2.call(t, "POST", "/api/tasks/"+tk.ID+"/retry", "", nil); code != 200 {
		t.Fatalf("retry: %d", code)
	}
	s2.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status == task.Running })
	if code := s2.call(t, "POST", "/api/tasks/"+tk.ID+"/stop", "", nil); code != 200 {
		t.Fatalf("stop: %d", code)
	}
}

// With no Conch running, the doctor reads the home itself and counts a task
// left running as interrupted; a broken provider would make it exit 1.
func TestDoctorWithoutARunningConch(t *testing.T) {
	home := t.TempDir()
	s := start(t, home)
	var tk task.Task
	s.call(t, "POST", "/api/tasks", fmt.Sprintf(`{"text":"sleep 300","options":{"mode":"auto","cwd":%q}}`, t.TempDir()), &tk)
	s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status == task.Running })
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()

	out, err := exec.Command(bin, "doctor", "--home", home).CombinedOutput()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	for _, want := range []string{"Conch is not running; checked " + home, "1 task was interrupted", "Only the shell is ready", "ok    Store", fmt.Sprintf("Opens fine: schema version %d", store.SchemaVersion)} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("doctor output lacks %q:\n%s", want, out)
		}
	}
	cmd := exec.Command(bin, "doctor", "--home", home)
	cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("doctor without bash: want exit 1, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "FAIL  Providers") || !strings.Contains(string(out), "bash was not found on PATH") {
		t.Fatalf("doctor without bash:\n%s", out)
	}
}

// A second Conch on the same home refuses to start, naming the first one.
func TestSecondServerOnSameHomeIsRefused(t *testing.T) {
	home := t.TempDir()
	first := start(t, home)
	cmd := exec.Command(bin, "serve", "--home", home, "--addr", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("second server started: %s", out)
	}
	want := fmt.Sprintf("%s is in use by another Conch, process %d (%s serve --home %s", home, first.cmd.Process.Pid, bin, home)
	if !strings.Contains(string(out), want) {
		t.Fatalf("second server said %q, want it to name the first (%q)", out, want)
	}
}

// marked counts live processes carrying the task's mark.
func marked(id string) int {
	dirs, _ := os.ReadDir("/proc")
	n := 0
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err == nil && strings.Contains(string(env), taskrun.EnvTaskID+"="+id+"\x00") {
			n++
		}
	}
	return n
}
