package procmark

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

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
