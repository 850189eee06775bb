//go:build linux

package hostlink_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/host"
	"conch/backend/hostlink"
	"conch/backend/output"
	"conch/backend/provider/shell"
	"conch/backend/remote/ssh"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/testrig/sshd"
)

// version is the runner's version the tests build and start.
const version = "hostlink-test"

var (
	buildMu   sync.Mutex
	buildDirs = map[string]string{}
)

// TestMain removes the runner's builds when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range buildDirs {
		_ = os.RemoveAll(d)
	}
	os.Exit(code)
}

// builds is the runner's static build of version for this machine's
// arch, found as Conch finds it ($CONCH_REMOTE_BUILDS).
func builds(t testing.TB) func(arch string) (string, string, error) {
	t.Helper()
	t.Setenv(hostlink.BuildsEnv, buildOf(t, version))
	return hostlink.FindBuilds(version)
}

// buildOf builds the runner of version v for this machine's arch, once
// for every test (as make remote does), and returns its folder.
func buildOf(t testing.TB, v string) string {
	t.Helper()
	arch := runtime.GOARCH
	if arch != "amd64" && arch != "arm64" {
		t.Skipf("the runner is built for amd64 and arm64, not %s", arch)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if d, ok := buildDirs[v]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", "conch-runner-build-")
	if err != nil {
		t.Fatal(err)
	}
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "conch-linux-"+arch)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X conch/backend/version.Version="+v, "-o", out, ".")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the runner: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if err := os.WriteFile(out+".sha256", []byte(hex.EncodeToString(sum[:])+"  conch-linux-"+arch+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	buildDirs[v] = dir
	return dir
}

// rig is a desktop Conch's task side, with one host: the store, the hosts,
// the links and the task runner, reopened on the same home as a restarted
// Conch would be.
type rig struct {
	t      testing.TB
	s      *sshd.Server
	dir    string
	sshCfg ssh.Config
	builds func(string) (string, string, error)
	// version is the runner's version this desktop starts.
	version string

	st    *store.Bolt
	bus   *event.Bus
	hosts *host.Service
	links *hostlink.Links
	tasks *taskrun.Runner
	logs  *output.Logs
}

// newRig starts a host (o shapes it) and a desktop that knows it as
// "box", its key accepted unless unknownKey.
func newRig(t testing.TB, o sshd.Options, unknownKey bool) *rig {
	t.Helper()
	s := sshd.Start(t, o)
	r := &rig{t: t, s: s, dir: t.TempDir(), builds: builds(t), version: version}
	ctl, err := os.MkdirTemp("", "cl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(ctl) })
	r.sshCfg = ssh.Config{ConfigFile: s.Config, KnownHosts: filepath.Join(r.dir, "known_hosts"), ControlDir: ctl, ConnectTimeout: 5 * time.Second}
	r.open()
	t.Cleanup(r.close)
	if _, _, err := r.hosts.Put("box", host.PutRequest{Target: s.Alias}); err != nil {
		t.Fatal(err)
	}
	if !unknownKey {
		r.accept()
	}
	return r
}

// accept tests the host and accepts the key it shows.
func (r *rig) accept() {
	r.t.Helper()
	ctx := context.Background()
	res, err := r.hosts.Test(ctx, "box")
	if err != nil {
		r.t.Fatal(err)
	}
	if res.Host.Fingerprint != r.s.Fingerprint() {
		r.t.Fatalf("the host shows %q, its key is %s (%s)", res.Host.Fingerprint, r.s.Fingerprint(), res.Host.Reason)
	}
	if _, err := r.hosts.AcceptKey("box", host.AcceptRequest{Fingerprint: res.Host.Fingerprint}); err != nil {
		r.t.Fatal(err)
	}
}

// open starts the desktop's parts on the rig's home.
func (r *rig) open() {
	r.t.Helper()
	st, err := store.Open(filepath.Join(r.dir, "conch.db"))
	if err != nil {
		r.t.Fatal(err)
	}
	c, err := ssh.New(r.sshCfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.st, r.bus = st, event.NewBus()
	r.hosts = host.New(host.Config{Store: st, SSH: c, Version: r.version, Bus: r.bus})
	r.links = hostlink.New(hostlink.Config{Hosts: r.hosts, Builds: r.builds, Version: r.version,
		SocketDir: r.sshCfg.ControlDir, Retry: 100 * time.Millisecond, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	r.logs = output.New(filepath.Join(r.dir, "tasks"))
	home, _ := os.UserHomeDir()
	r.tasks = taskrun.New(taskrun.Config{Store: st, Bus: r.bus, Logs: r.logs, Home: home,
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: home}}, Hosts: r.links})
	ctx := context.Background()
	for _, p := range []interface{ Start(context.Context) error }{r.hosts, r.links, r.tasks} {
		if err := p.Start(ctx); err != nil {
			r.t.Fatal(err)
		}
	}
}

// close stops the desktop's parts, in reverse; the host's tasks go on
// there.
func (r *rig) close() {
	if r.st == nil {
		return
	}
	r.tasks.Stop()
	r.links.Stop()
	r.hosts.Stop()
	_ = r.st.Close()
	r.st = nil
}

// send starts a shell task on the host.
func (r *rig) send(text string, o taskrun.Options) task.Task {
	r.t.Helper()
	o.Host = "box"
	if o.Mode == "" {
		o.Mode = "auto"
	}
	tk, err := r.tasks.Create(taskrun.CreateRequest{Text: text, Options: o})
	if err != nil {
		r.t.Fatal(err)
	}
	return tk
}

// wait returns the task once ok says so, failing the test after d.
func (r *rig) wait(id string, d time.Duration, what string, ok func(task.Task) bool) task.Task {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		tk, err := r.tasks.Get(id)
		if err == nil && ok(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("task did not come to %s within %s: %+v (%v)", what, d, tk, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ended waits for the task to finish.
func (r *rig) ended(id string) task.Task {
	r.t.Helper()
	return r.wait(id, 60*time.Second, "an end", func(t task.Task) bool { return t.Status.Finished() })
}

// output is the task's log here.
func (r *rig) output(id string) string {
	r.t.Helper()
	b, err := os.ReadFile(r.logs.Path(id))
	if err != nil && !os.IsNotExist(err) {
		r.t.Fatal(err)
	}
	return string(b)
}

// processes are the host user's processes whose command lines begin with s.
func (r *rig) processes(s string) []string {
	var out []string
	for _, p := range sshd.Processes(r.s.UID) {
		if c := sshd.Cmdline(p); strings.HasPrefix(c, s) {
			out = append(out, c)
		}
	}
	return out
}

// runnerPid is the pid of the runner serving on the host (0: none).
func (r *rig) runnerPid() int {
	for _, p := range sshd.Processes(r.s.UID) {
		if strings.Contains(sshd.Cmdline(p), " runner --home ") {
			return p
		}
	}
	return 0
}

// appendFile adds b to the file at path.
func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
