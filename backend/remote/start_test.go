//go:build unix

package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The start line, run as an SSH session runs it (the login shell given
// one line), starts the binary with its home and socket in a session of
// its own, its input closed and its output in the home's runner.log,
// whatever quotes and spaces the paths hold.
func TestCommandStartsTheRunnerDetached(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's a dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report")
	// The fake conch says what it was given and where it stands.
	fake := "#!/bin/sh\n" +
		"printf '%s\\n' \"$@\" > " + Quote(report) + ".args\n" +
		"echo \"$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f4) $(readlink /proc/$$/fd/0) $PWD\" > " + Quote(report) + ".tmp\n" +
		"echo to-the-log\n" +
		"mv " + Quote(report) + ".tmp " + Quote(report) + "\n"
	bin := filepath.Join(dir, "conch $(x)")
	if err := os.WriteFile(bin, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Start{Bin: bin, Home: filepath.Join(dir, "home \"h\""), Socket: filepath.Join(dir, "s'ock")}
	// No systemd-run on this PATH: the setsid branch runs.
	sh := exec.Command("/bin/sh", "-c", s.Command())
	sh.Env = []string{"PATH=" + tools(t, "mkdir", "setsid", "cut", "sed", "readlink", "mv"), "HOME=" + dir}
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("start line: %v\n%s", err, out)
	}
	if len(out) != 0 {
		t.Errorf("the start line printed %q", out)
	}
	var got string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(report); err == nil {
			got = strings.TrimSpace(string(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the runner never started")
		}
	}
	f := strings.Fields(got)
	mySession := sessionOf(t, os.Getpid())
	if len(f) != 3 || f[0] == strconv.Itoa(mySession) || f[1] != "/dev/null" || f[2] != "/" {
		t.Fatalf("the runner stood as %q (session, stdin, cwd); want a session other than %d, /dev/null, /", got, mySession)
	}
	args, _ := os.ReadFile(report + ".args")
	want := strings.Join([]string{"runner", "--home", s.Home, "--socket", s.Socket}, "\n") + "\n"
	if string(args) != want {
		t.Fatalf("the runner was given %q, want %q", args, want)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		log, _ := os.ReadFile(filepath.Join(s.Home, "runner.log"))
		if string(log) == "to-the-log\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner.log holds %q", log)
		}
	}
	if fi, err := os.Stat(s.Home); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the home was not made private: %v %v", fi, err)
	}
}

func TestScriptPrefersSystemdRun(t *testing.T) {
	s := Start{Bin: "/h/.conch-remote/1.2.3/conch-linux-amd64", Home: "/h/.conch-remote/home", Socket: "/run/user/1000/conch/runner.sock"}
	script := s.Script()
	for _, want := range []string{
		"systemctl --user show-environment",
		"-p Linger --value",
		"exec systemd-run --user --quiet --collect --unit='conch-runner' --property=KillMode=mixed '/h/.conch-remote/1.2.3/conch-linux-amd64' runner --home '/h/.conch-remote/home' --socket '/run/user/1000/conch/runner.sock'",
		"setsid '/h/.conch-remote/1.2.3/conch-linux-amd64' runner",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if !strings.HasPrefix(s.Command(), "exec /bin/sh -c '") {
		t.Errorf("command %q does not hand over to a plain sh", s.Command())
	}
}

func sessionOf(t *testing.T, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, _ := strconv.Atoi(f[3])
	return n
}

// tools is a folder holding only the named commands, for a PATH.
func tools(t *testing.T, names ...string) string {
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
