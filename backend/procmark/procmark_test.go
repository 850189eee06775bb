package procmark

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestEnvReplacesAnInheritedMark(t *testing.T) {
	base := []string{"PATH=/bin", EnvHome + "=parent", EnvTask + "=old", "HOME=/h"}
	got := Mark{Home: "mine", Task: "t1"}.Env(base)
	want := []string{"PATH=/bin", "HOME=/h", EnvHome + "=mine", EnvTask + "=t1"}
	if !slices.Equal(got, want) {
		t.Fatalf("env %q, want %q", got, want)
	}
}

func TestMatchesNeedsTheHomeAndEveryNamedPart(t *testing.T) {
	env := []byte("A=1\x00" + EnvHome + "=h1\x00" + EnvTask + "=t1\x00" + EnvChat + "=c1\x00")
	cases := []struct {
		m    Mark
		want bool
	}{
		{Mark{Home: "h1"}, true},
		{Mark{Home: "h1", Task: "t1"}, true},
		{Mark{Home: "h1", Task: "t1", Chat: "c1"}, true},
		{Mark{Home: "h2", Task: "t1"}, false}, // a copy of the home: same task id, other home
		{Mark{Home: "h1", Task: "t2"}, false},
		{Mark{Home: "h1", Chat: "c2"}, false},
		{Mark{Task: "t1"}, false}, // no home: never matches
		{Mark{Home: "h"}, false},  // a prefix is not the value
	}
	for _, c := range cases {
		if got := c.m.Matches(env); got != c.want {
			t.Errorf("%+v: %v, want %v", c.m, got, c.want)
		}
	}
}

func TestHomeMarkTellsACopyApart(t *testing.T) {
	a := t.TempDir()
	if err := os.WriteFile(filepath.Join(a, "conch.db"), []byte("same bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := t.TempDir()
	if err := os.WriteFile(filepath.Join(b, "conch.db"), []byte("same bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	ma := HomeMark(a, filepath.Join(a, "conch.db"))
	again := HomeMark(a, filepath.Join(a, "conch.db"))
	mb := HomeMark(b, filepath.Join(b, "conch.db"))
	if ma == "" || ma != again || ma == mb {
		t.Fatalf("marks: %q %q %q", ma, again, mb)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	if ml := HomeMark(link, filepath.Join(link, "conch.db")); ml != ma {
		t.Fatalf("the same home through a symlink has another mark: %q vs %q", ml, ma)
	}
}

// Two processes with the same task id under two homes: reaping one home's
// task ends its process (and its child in a session of its own) and leaves
// the other home's alone.
func TestReapEndsOnlyThisHomesProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("marks are read from /proc")
	}
	startMarked := func(m Mark) *exec.Cmd {
		t.Helper()
		// The child leaves the group with setsid, as coding agents' shell tools do.
		cmd := exec.Command("bash", "-c", "setsid sleep 60 & sleep 60; wait")
		cmd.Env = m.Env(os.Environ())
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, pid := range Find(m) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
		return cmd
	}
	mine := Mark{Home: "home-a", Task: "task-1"}
	theirs := Mark{Home: "home-b", Task: "task-1"}
	a := startMarked(mine)
	startMarked(theirs)
	// bash, its sleep and the setsid'd sleep.
	waitFor(t, "both process trees to start", func() bool { return len(Find(mine)) == 3 && len(Find(theirs)) == 3 })

	if n := Reap(mine, a.Process.Pid); n == 0 {
		t.Fatal("reaped nothing")
	}
	waitFor(t, "this home's processes to end", func() bool { return len(Find(mine)) == 0 })
	if got := len(Find(theirs)); got != 3 {
		t.Fatalf("the other home has %d of its 3 processes left", got)
	}
	if n := Reap(Mark{Task: "task-1"}, 0); n != 0 {
		t.Fatalf("a mark without a home reaped %d processes", n)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
