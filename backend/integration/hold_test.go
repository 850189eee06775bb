package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"conch/backend/procmark"
	"conch/backend/task"
)

// up reports whether the server process is still alive and answering.
func (s *server) up(t *testing.T) bool {
	t.Helper()
	if s.cmd.ProcessState != nil {
		return false
	}
	r, _ := http.NewRequest("GET", s.base+"/api/tasks", nil)
	r.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(r)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// do is call for many goroutines at once: it returns the status or -1.
func (s *server) do(method, path, body string) int {
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
		return -1
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (s *server) create(t *testing.T, text, dir string) task.Task {
	t.Helper()
	var tk task.Task
	body := fmt.Sprintf(`{"text":%q,"options":{"mode":"auto","cwd":%q}}`, text, dir)
	if code := s.call(t, "POST", "/api/tasks", body, &tk); code != 201 {
		t.Fatalf("create %q: %d", text, code)
	}
	return tk
}

func (s *server) kill9(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = s.cmd.Process.Wait()
}

// Try again clicked 500 times on one task by six clients at once: the
// server stays up and the task ends in one piece.
func TestRetryHammerLeavesTheServerUp(t *testing.T) {
	s := start(t, t.TempDir())
	tk := s.create(t, "true", t.TempDir())
	s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status == task.Done })
	var sent, taken atomic.Int64
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sent.Add(1) <= 500 {
				switch code := s.do("POST", "/api/tasks/"+tk.ID+"/retry", ""); code {
				case 200:
					taken.Add(1)
				case 409:
				default:
					t.Errorf("retry answered %d", code)
					return
				}
			}
		}()
	}
	wg.Wait()
	if !s.up(t) {
		t.Fatal("the server went down under the retries")
	}
	if taken.Load() == 0 {
		t.Fatal("no retry was taken")
	}
	got := s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status.Finished() })
	if got.Status != task.Done {
		t.Fatalf("after the hammer: %s %q", got.Status, got.Error)
	}
}

// Retry and Delete on the same task from two clients, 1,000 times: every
// task whose delete was answered 204 is gone, also after a restart.
func TestRetryThenDeleteNeverBringsATaskBack(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	s := start(t, home)
	const n = 1000
	ids := make([]string, n)
	for i := range n {
		ids[i] = s.create(t, "true", dir).ID
	}
	for _, id := range ids {
		s.waitTask(t, id, func(t task.Task) bool { return t.Status.Finished() })
	}
	var deleted sync.Map
	var wg sync.WaitGroup
	work := make(chan string)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				var inner sync.WaitGroup
				inner.Add(2)
				go func() { defer inner.Done(); s.do("POST", "/api/tasks/"+id+"/retry", "") }()
				go func() {
					defer inner.Done()
					for range 200 {
						switch code := s.do("DELETE", "/api/tasks/"+id, ""); code {
						case 204:
							deleted.Store(id, true)
							return
						case 409: // working now: try again once it ends
							time.Sleep(5 * time.Millisecond)
						default:
							t.Errorf("delete answered %d", code)
							return
						}
					}
				}()
				inner.Wait()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	count := 0
	deleted.Range(func(any, any) bool { count++; return true })
	if count < n*9/10 {
		t.Fatalf("only %d of %d deletes went through", count, n)
	}
	listed := func(s *server) map[string]bool {
		var list struct {
			Tasks []task.Task `json:"tasks"`
		}
		if code := s.call(t, "GET", "/api/tasks", "", &list); code != 200 {
			t.Fatalf("list: %d", code)
		}
		out := map[string]bool{}
		for _, tk := range list.Tasks {
			out[tk.ID] = true
		}
		return out
	}
	time.Sleep(300 * time.Millisecond) // a run that escaped would write now
	before := listed(s)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_, _ = s.cmd.Process.Wait()
	s2 := start(t, home)
	after := listed(s2)
	deleted.Range(func(k, _ any) bool {
		id := k.(string)
		if before[id] || after[id] {
			t.Errorf("deleted task %s is back (before the restart %v, after %v)", id, before[id], after[id])
		}
		return true
	})
}

// Two homes, one a copy of the other, served at once: killing and
// restarting either never ends a process the other started.
func TestACopyOfAHomeNeverEndsTheOriginalsProcesses(t *testing.T) {
	homeA := t.TempDir()
	a := start(t, homeA)
	ta := a.create(t, "sleep 307", t.TempDir())
	a.waitTask(t, ta.ID, func(t task.Task) bool { return t.Status == task.Running && t.Pid > 0 })
	markA := procmark.HomeMark(homeA, filepath.Join(homeA, "conch.db"))
	aProcs := func() int { return len(procmark.Find(procmark.Mark{Home: markA, Task: ta.ID})) }
	if aProcs() == 0 {
		t.Fatal("the first home's task has no marked process")
	}

	// A person copies the home while the first Conch runs, and serves the
	// copy. A file the search index drops while cp reads the folder fails
	// the copy ("cannot stat"), as it would the person's: they copy again.
	homeB := filepath.Join(t.TempDir(), "copy")
	for try := 1; ; try++ {
		out, err := exec.Command("cp", "-a", homeA, homeB).CombinedOutput()
		if err == nil {
			break
		}
		if try == 5 || !strings.Contains(string(out), "No such file") {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		if err := os.RemoveAll(homeB); err != nil {
			t.Fatal(err)
		}
	}
	b := start(t, homeB)
	healed := b.waitTask(t, ta.ID, func(task.Task) bool { return true })
	if healed.Status != task.Interrupted {
		t.Fatalf("the copy's record of the task: %s", healed.Status)
	}
	markB := procmark.HomeMark(homeB, filepath.Join(homeB, "conch.db"))
	if markB == markA {
		t.Fatalf("the copy has the original's mark: %q", markB)
	}
	tb := b.create(t, "sleep 308", t.TempDir())
	b.waitTask(t, tb.ID, func(t task.Task) bool { return t.Status == task.Running && t.Pid > 0 })
	bProcs := func() int { return len(procmark.Find(procmark.Mark{Home: markB, Task: tb.ID})) }

	stillRunning := func(what string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond)
		if aProcs() == 0 {
			t.Fatalf("%s ended the first home's command", what)
		}
		if got := a.waitTask(t, ta.ID, func(task.Task) bool { return true }); got.Status != task.Running {
			t.Fatalf("%s: the first home's task is %s %q", what, got.Status, got.Error)
		}
	}
	stillRunning("starting the copy")

	// Kill the copy and start it again: it heals its own task, not the first's.
	b.kill9(t)
	b = start(t, homeB)
	stillRunning("restarting the copy after kill -9")
	if got := b.waitTask(t, tb.ID, func(task.Task) bool { return true }); got.Status != task.Interrupted {
		t.Fatalf("the copy's own task after its restart: %s", got.Status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for bProcs() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the copy's restart left its own task's process running")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Now the other way: the copy runs a command, the first dies and comes back.
	tb2 := b.create(t, "sleep 309", t.TempDir())
	b.waitTask(t, tb2.ID, func(t task.Task) bool { return t.Status == task.Running && t.Pid > 0 })
	a.kill9(t)
	a = start(t, homeA)
	if got := a.waitTask(t, ta.ID, func(task.Task) bool { return true }); got.Status != task.Interrupted {
		t.Fatalf("the first home's task after its restart: %s", got.Status)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(procmark.Find(procmark.Mark{Home: markB, Task: tb2.ID})); n == 0 {
		t.Fatal("restarting the first home ended the copy's command")
	}
	if got := b.waitTask(t, tb2.ID, func(task.Task) bool { return true }); got.Status != task.Running {
		t.Fatalf("the copy's task after the first home's restart: %s", got.Status)
	}
	if code := b.call(t, "POST", "/api/tasks/"+tb2.ID+"/stop", "", nil); code != 200 {
		t.Fatalf("stop the copy's task: %d", code)
	}
}

// The address: anything beyond loopback is refused unless --allow-remote,
// which warns that the link is plain HTTP.
func TestServeRefusesAnAddressBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		cmd := exec.Command(bin, "serve", "--home", t.TempDir(), "--addr", addr)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Fatalf("%s: want exit 2, got %v\n%s", addr, err, out)
		}
		if !bytes.Contains(out, []byte("every network interface")) || !bytes.Contains(out, []byte("--allow-remote")) {
			t.Fatalf("%s said %q", addr, out)
		}
	}
	cmd := exec.Command(bin, "serve", "--home", t.TempDir(), "--addr", "0.0.0.0:0", "--allow-remote")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	warning, _ := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(warning, "over plain HTTP") {
		t.Fatalf("--allow-remote did not warn: %q", warning)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "conch: serving http://127.0.0.1:") {
		t.Fatalf("--allow-remote printed %q", line)
	}
}

// A fallback that is not a connected provider is refused, and the
// preferences stay as they were.
func TestAnUnknownFallbackIsRefused(t *testing.T) {
	s := start(t, t.TempDir())
	var body string
	if code := s.call(t, "PATCH", "/api/preferences", `{"limitFallback":"nope"}`, &body); code != 400 || !strings.Contains(body, `none is called \"nope\"`) {
		t.Fatalf("PATCH an unknown fallback: %d %s", code, body)
	}
	var prefs struct {
		LimitFallback string `json:"limitFallback"`
	}
	if s.call(t, "GET", "/api/preferences", "", &prefs); prefs.LimitFallback != "" {
		t.Fatalf("the refused fallback was saved: %q", prefs.LimitFallback)
	}
}

// Stopping a task ends every process it started within two seconds, a
// grandchild in a session of its own too; and nothing a task started
// outlives Conch's own exit.
func TestStopAndExitEndTheWholeTree(t *testing.T) {
	home := t.TempDir()
	s := start(t, home)
	mark := procmark.Mark{Home: procmark.HomeMark(home, filepath.Join(home, "conch.db"))}
	tree := func(id string) int { m := mark; m.Task = id; return len(procmark.Find(m)) }
	tk := s.create(t, "setsid sleep 313 & sleep 314 & wait", t.TempDir())
	s.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status == task.Running })
	deadline := time.Now().Add(5 * time.Second)
	for tree(tk.ID) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the task's tree never came up (%d processes)", tree(tk.ID))
		}
		time.Sleep(20 * time.Millisecond)
	}
	began := time.Now()
	if code := s.call(t, "POST", "/api/tasks/"+tk.ID+"/stop", "", nil); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	for tree(tk.ID) > 0 {
		if time.Since(began) > 2*time.Second {
			t.Fatalf("%d processes of the stopped task still run after 2 s", tree(tk.ID))
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Conch exits while a task runs: its whole tree goes with it.
	tk2 := s.create(t, "setsid sleep 315 & sleep 316 & wait", t.TempDir())
	s.waitTask(t, tk2.ID, func(t task.Task) bool { return t.Status == task.Running })
	for tree(tk2.ID) < 3 {
		time.Sleep(20 * time.Millisecond)
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_, _ = s.cmd.Process.Wait()
	deadline = time.Now().Add(3 * time.Second)
	for len(procmark.Find(mark)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of this home outlived Conch", len(procmark.Find(mark)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
