//go:build linux

package cli_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"conch/backend/client"
	"conch/backend/host"
	"conch/backend/hostlink"
	"conch/backend/task"
	"conch/backend/testrig/conchserve"
	"conch/backend/testrig/sshd"
)

// remoteServe is a real `conch serve` that reaches the rig's host: the
// ssh config the rig wrote is its preference, and the runner's build for
// this arch is the conch under test (this computer is the host too).
type remoteServe struct {
	home string
	env  []string
	srv  *conchserve.Served
}

func startRemoteServe(t *testing.T, s *sshd.Server) *remoteServe {
	t.Helper()
	builds := t.TempDir()
	arch := runtime.GOARCH
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	name := "conch-linux-" + arch
	if err := os.WriteFile(filepath.Join(builds, name), b, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if err := os.WriteFile(filepath.Join(builds, name+".sha256"), []byte(hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &remoteServe{home: t.TempDir(), env: []string{"DISPLAY=", "WAYLAND_DISPLAY=", hostlink.BuildsEnv + "=" + builds}}
	r.start(t)
	c, err := client.Dial(r.home)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Do(ctx, http.MethodPatch, "/api/preferences", map[string]any{"sshConfig": s.Config}, nil); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *remoteServe) start(t *testing.T) {
	t.Helper()
	r.srv = conchserve.Start(t, bin, []string{"serve", "--home", r.home, "--addr", "127.0.0.1:0"}, r.env)
}

// Adding a real host over SSH from the command line: its unknown key is
// shown and nothing connects until it is accepted; then it is ready, and
// `conch run --host` runs a command there as its user, printing what it
// printed. Conch killed mid-task leaves the task working there; the next
// Conch follows it again to done, its output whole.
func TestHostsOverRealSSH(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	r := startRemoteServe(t, s)
	must(t, r.home, "hosts", "add", "box", s.Alias)
	res := conch(t, r.home, "hosts", "test", "box")
	fp := regexp.MustCompile(`SHA256:[A-Za-z0-9+/]{43}`).FindString(res.stdout)
	if res.code != 1 || fp != s.Fingerprint() || !strings.Contains(res.stdout, "conch hosts accept box "+fp) {
		t.Fatalf("testing a host whose key is unknown: %d %q %q (its key is %s)", res.code, res.stdout, res.stderr, s.Fingerprint())
	}
	if strings.Contains(s.Logs(), "Accepted publickey") {
		t.Fatal("Conch signed in before the key was accepted")
	}
	must(t, r.home, "hosts", "accept", "box", fp)
	res = must(t, r.home, "hosts", "test", "box", "--json")
	var tr host.TestResult
	if err := json.Unmarshal([]byte(res.stdout), &tr); err != nil || tr.Host.Status != "ready" || tr.Host.User != s.User || tr.Host.Home != s.Home {
		t.Fatalf("after the accept: %v %q", err, res.stdout)
	}

	res = must(t, r.home, "run", "--host", "box", "--wait", `id -un; pwd`)
	if res.stdout != s.User+"\n"+s.Home+"\n" {
		t.Fatalf("run --host printed %q", res.stdout)
	}

	id := strings.TrimSpace(must(t, r.home, "run", "--host", "box", "--cwd", "~", `for i in $(seq 1 40); do echo "line $i"; sleep 0.05; done`).stdout)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if tk := r.task(t, id); tk.OutputBytes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task on the host printed nothing")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = r.srv.Cmd.Process.Signal(syscall.SIGKILL)
	_ = r.srv.Cmd.Wait()
	time.Sleep(time.Second) // it works on there, alone
	r.start(t)
	res = must(t, r.home, "logs", "-f", id)
	var want strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if res.stdout != want.String() {
		t.Fatalf("after Conch was killed and started again, its output is %q", res.stdout)
	}
	if tk := r.task(t, id); tk.Status != task.Done || tk.Host != "box" {
		t.Fatalf("it ended %s on %q", tk.Status, tk.Host)
	}
}

// task reads the task id from the running Conch.
func (r *remoteServe) task(t *testing.T, id string) task.Task {
	t.Helper()
	c, err := client.Dial(r.home)
	if err != nil {
		t.Fatal(err)
	}
	var tk task.Task
	if err := c.Do(context.Background(), http.MethodGet, "/api/tasks/"+id, nil, &tk); err != nil {
		t.Fatal(err)
	}
	return tk
}
