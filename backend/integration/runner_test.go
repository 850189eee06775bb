//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conch/backend/client"
	"conch/backend/remote"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// runnerProc is a real `conch runner` the test started on a home and a
// socket of its own.
type runnerProc struct {
	cmd        *exec.Cmd
	home, sock string
	done       chan struct{} // closed once it has ended
	err        error         // how it ended, once done is closed
}

// startRunner runs `conch runner` and waits for its line saying it serves.
func startRunner(t *testing.T, home, sock string) *runnerProc {
	t.Helper()
	cmd := exec.Command(bin, "runner", "--home", home, "--socket", sock)
	cmd.Stderr = os.Stderr
	// A pipe of the test's own: the runner's Wait does not wait on what
	// its tasks may hold of it.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := &runnerProc{cmd: cmd, home: home, sock: sock, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		defer out.Close()
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-r.done })
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "conch: runner serving on "+sock) {
			t.Fatalf("the runner printed %q", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the runner printed nothing")
	}
	return r
}

// client reaches the runner through its socket with the token in its home.
func (r *runnerProc) client(t *testing.T) *client.Client {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(r.home, client.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return client.DialSocket(r.sock, string(tok))
}

func (r *runnerProc) create(t *testing.T, c *client.Client, text string) task.Task {
	t.Helper()
	var tk task.Task
	if err := c.Do(context.Background(), http.MethodPost, "/api/tasks", taskrun.CreateRequest{Text: text, Options: taskrun.Options{Mode: "auto"}}, &tk); err != nil {
		t.Fatalf("create a task through the socket: %v", err)
	}
	return tk
}

func waitFor(t *testing.T, c *client.Client, id string, ok func(task.Task) bool) task.Task {
	t.Helper()
	var tk task.Task
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(30 * time.Millisecond) {
		err := c.Do(context.Background(), http.MethodGet, "/api/tasks/"+id, nil, &tk)
		if err == nil && ok(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: gave up waiting (%v); last %+v", id, err, tk)
		}
	}
}

// seen is what one follower was handed.
type seen struct {
	mu     sync.Mutex
	out    bytes.Buffer
	revs   []int64
	status task.Status
	from   []int64
}

func (s *seen) take(ch client.Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch.Task != nil {
		s.revs = append(s.revs, ch.Task.Rev)
		s.status = ch.Task.Status
	}
	if ch.Output != nil {
		s.from = append(s.from, ch.From)
		s.out.Write(ch.Output)
	}
}

// has reports whether the output holds what.
func (s *seen) has(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(s.out.String(), what)
}

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// A shell task made through the socket runs and streams; a client that
// goes away mid-task leaves marks from which a new one catches up with
// every state after them and the rest of the output, once; a third that
// followed from nothing, at the same time, saw it all too.
func TestRunnerSocketStreamsAndACaughtUpClientMissesNothing(t *testing.T) {
	r := startRunner(t, t.TempDir(), filepath.Join(t.TempDir(), "run", "runner.sock"))
	c := r.client(t)
	var whole seen
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	wholeDone := make(chan error, 1)
	go func() { wholeDone <- client.NewFollower(r.client(t), nil).Follow(wctx, whole.take) }()

	tk := r.create(t, c, "for i in $(seq 1 40); do echo line $i; sleep 0.05; done")
	var first seen
	ctx1, cancel1 := context.WithTimeout(context.Background(), 20*time.Second)
	f1 := client.NewFollower(c, nil)
	err := f1.Follow(ctx1, func(ch client.Change) {
		first.take(ch)
		if first.has("line 5\n") {
			cancel1() // the first client goes away mid-task
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the first follower ended with %v", err)
	}
	marks := f1.Marks()
	if marks[tk.ID].Offset == 0 || first.status == task.Done {
		t.Fatalf("the first client left at %+v, status %s: not mid-task", marks[tk.ID], first.status)
	}

	var second seen
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	err = client.NewFollower(r.client(t), marks).Follow(ctx2, func(ch client.Change) {
		second.take(ch)
		if second.status.Finished() && second.has("line 40\n") {
			cancel2()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the second follower ended with %v (status %s, output %q)", err, second.status, second.out.String())
	}
	if second.status != task.Done {
		t.Fatalf("the task ended %s", second.status)
	}
	if got := first.out.String() + second.out.String(); got != lines(40) {
		t.Fatalf("the two clients got %q between them, want each line once", got)
	}
	if second.from[0] != marks[tk.ID].Offset {
		t.Fatalf("the second client read from %d, its mark was %d", second.from[0], marks[tk.ID].Offset)
	}
	revs := append(append([]int64{}, first.revs...), second.revs...)
	for i := 1; i < len(revs); i++ {
		if revs[i] <= revs[i-1] {
			t.Fatalf("revs handed on %v: not each newer than the last", revs)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); !whole.has("line 40\n"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the follower from nothing got %q", whole.out.String())
		}
	}
	wcancel()
	<-wholeDone
	if whole.out.String() != lines(40) {
		t.Fatalf("the follower from nothing got %q", whole.out.String())
	}
}

// A runner killed mid-task and started again heals as a local Conch does:
// the task is interrupted and Retry runs it again (two clients' Retry at
// once: one takes effect, the other is refused with 409). A second runner
// on the same home is refused by the store's lock, saying which holds it.
func TestRunnerKilledMidTaskHealsAndRetries(t *testing.T) {
	home, marker := t.TempDir(), filepath.Join(t.TempDir(), "ran-once")
	sock := filepath.Join(t.TempDir(), "run", "runner.sock")
	r := startRunner(t, home, sock)
	c := r.client(t)
	tk := r.create(t, c, fmt.Sprintf("if [ -e %[1]s ]; then echo again; else touch %[1]s; echo first; sleep 60; fi", marker))
	waitFor(t, c, tk.ID, func(t task.Task) bool { return t.Status == task.Running && t.OutputBytes > 0 })
	// A desktop that had caught up before the kill…
	var before seen
	f := client.NewFollower(c, nil)
	if err := f.CatchUp(context.Background(), before.take); err != nil || before.out.String() != "first\n" {
		t.Fatalf("catch up before the kill: %v, output %q", err, before.out.String())
	}
	marks := f.Marks()

	out, err := exec.Command(bin, "runner", "--home", home, "--socket", sock+"2").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another runner has this home") || !strings.Contains(string(out), "process "+strconv.Itoa(r.cmd.Process.Pid)) {
		t.Fatalf("a second runner on the home: %v %q", err, out)
	}

	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the killed runner left no socket to replace: %v", err)
	}
	r = startRunner(t, home, sock) // over the stale socket
	c = r.client(t)
	got := waitFor(t, c, tk.ID, func(task.Task) bool { return true })
	if got.Status != task.Interrupted {
		t.Fatalf("after the kill the task is %s, want interrupted", got.Status)
	}
	// …catches up from its marks with the healed state, and no output twice.
	var after seen
	if err := client.NewFollower(c, marks).CatchUp(context.Background(), after.take); err != nil {
		t.Fatal(err)
	}
	if after.status != task.Interrupted || len(after.revs) != 1 || after.revs[0] <= marks[tk.ID].Rev || after.out.Len() != 0 {
		t.Fatalf("caught up after the restart with revs %v (mark %d), status %s, output %q", after.revs, marks[tk.ID].Rev, after.status, after.out.String())
	}
	codes := make(chan int, 2)
	clients := []*client.Client{r.client(t), r.client(t)}
	for _, cl := range clients {
		go func() {
			err := cl.Do(context.Background(), http.MethodPost, "/api/tasks/"+tk.ID+"/retry", nil, nil)
			var apiErr *client.Error
			switch {
			case err == nil:
				codes <- 200
			case errors.As(err, &apiErr):
				codes <- apiErr.Status
			default:
				codes <- 0
			}
		}()
	}
	if a, b := <-codes, <-codes; min(a, b) != 200 || max(a, b) != 409 {
		t.Fatalf("two Retries at once answered %d and %d, want one 200 and one 409", a, b)
	}
	done := waitFor(t, c, tk.ID, func(t task.Task) bool { return t.Status.Finished() })
	b, _, err := c.Output(context.Background(), tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != task.Done || !strings.Contains(string(b), "again") {
		t.Fatalf("the retried task ended %s with %q", done.Status, b)
	}
}

// SIGTERM ends the runner cleanly: exit 0, the running task interrupted
// (seen by the next runner), the socket and the pid file removed.
func TestRunnerEndsCleanlyOnSIGTERM(t *testing.T) {
	home, sock := t.TempDir(), filepath.Join(t.TempDir(), "run", "runner.sock")
	r := startRunner(t, home, sock)
	c := r.client(t)
	tk := r.create(t, c, "echo up; sleep 60")
	waitFor(t, c, tk.ID, func(t task.Task) bool { return t.Status == task.Running })
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("the runner ended with %v on SIGTERM", r.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the runner did not end on SIGTERM")
	}
	for _, p := range []string{sock, sock + remote.PidSuffix} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	r = startRunner(t, home, sock)
	if got := waitFor(t, r.client(t), tk.ID, func(task.Task) bool { return true }); got.Status != task.Interrupted {
		t.Fatalf("the task is %s after SIGTERM, want interrupted", got.Status)
	}
}

// Started by the start line from a session that then dies (its parent
// killed, its group hung up), the runner carries on serving.
func TestRunnerOutlivesTheSessionThatStartedIt(t *testing.T) {
	home, sock := filepath.Join(t.TempDir(), "home"), filepath.Join(t.TempDir(), "run", "runner.sock")
	start := remote.Start{Bin: bin, Home: home, Socket: sock}
	parent := exec.Command("/bin/sh", "-c", start.Command()+"; sleep 60")
	parent.Dir = t.TempDir()
	// No systemd-run on this PATH: the setsid branch, as on a host without it.
	parent.Env = []string{"HOME=" + home, "PATH=" + pathOf(t, "mkdir", "setsid", "sleep", "bash")}
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := sock + remote.PidSuffix
	var pid int
	for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(30 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the detached runner never wrote its pid file")
		}
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	_ = syscall.Kill(-parent.Process.Pid, syscall.SIGHUP)
	_ = syscall.Kill(-parent.Process.Pid, syscall.SIGKILL)
	_ = parent.Wait()
	time.Sleep(300 * time.Millisecond)
	r := &runnerProc{home: home, sock: sock}
	c := r.client(t)
	var list struct{ Tasks []task.Task }
	if err := c.Do(context.Background(), http.MethodGet, "/api/tasks", nil, &list); err != nil {
		t.Fatalf("the runner died with its session: %v", err)
	}
	tk := r.create(t, c, "echo still here")
	waitFor(t, c, tk.ID, func(t task.Task) bool { return t.Status == task.Done })
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(15 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(30 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the detached runner did not end on SIGTERM")
		}
	}
}

// pathOf is a PATH folder holding only the named commands.
func pathOf(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			t.Skipf("no %s here: %v", n, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Another user of the same computer cannot reach the runner's socket: its
// folder is 0700 and the socket 0600, each enough alone. (Opened up by
// hand, the same probe connects and still meets the token check, which
// shows the probe itself works.)
func TestRunnerSocketIsNotReachableByAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a second Unix user to connect as")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("needs curl to connect to a Unix socket as another user:", err)
	}
	uid, gid := otherUser(t)
	base, err := os.MkdirTemp("", "conch-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(base, "run", "runner.sock")
	startRunner(t, t.TempDir(), sock)
	probe := func() (int, string) {
		cmd := exec.Command(curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", sock, "http://localhost/api/tasks")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		cmd.Dir = "/"
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	const couldNotConnect = 7
	if code, out := probe(); code != couldNotConnect {
		t.Fatalf("another user reached the socket: curl exit %d, %q", code, out)
	}
	if err := os.Chmod(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out := probe(); code != couldNotConnect {
		t.Fatalf("another user reached the 0600 socket in an open folder: curl exit %d, %q", code, out)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	if code, out := probe(); code != 0 || out != "401" {
		t.Fatalf("the probe of an opened-up socket: curl exit %d, %q; want it to connect and meet the token check (401)", code, out)
	}
}

// otherUser makes a Unix user for the test (removed after it) and returns
// its uid and gid.
func otherUser(t *testing.T) (uid, gid uint32) {
	t.Helper()
	name := fmt.Sprintf("conchit%d", os.Getpid()%100000)
	if out, err := exec.Command("useradd", "-M", "-U", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Skipf("cannot make a second Unix user: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
	id := func(flag string) uint32 {
		out, err := exec.Command("id", flag, name).Output()
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatal(err)
		}
		return uint32(n)
	}
	return id("-u"), id("-g")
}
