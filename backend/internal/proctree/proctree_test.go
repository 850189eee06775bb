//go:build linux

package proctree

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"conch/backend/procmark"
)

// A stop ends the command, its group, and a grandchild that moved to a
// session of its own, within the grace period and a little; a process of
// another run of the same chat lives on.
func TestStopEndsTheWholeTreeAndNothingElse(t *testing.T) {
	chat := procmark.Mark{Home: "home-" + t.Name(), Chat: "chat-1"}
	start := func(m procmark.Mark) (*Tree, chan struct{}) {
		t.Helper()
		cmd := exec.Command("bash", "-c", "setsid sleep 300 & sleep 300 & wait")
		cmd.Env = os.Environ()
		tree, err := Start(cmd, m)
		if err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { tree.End(); <-exited })
		return tree, exited
	}
	mine := chat.WithRun()
	other := chat.WithRun()
	tree, exited := start(mine)
	start(other)
	waitFor(t, "both trees up", func() bool { return len(procmark.Find(mine)) == 3 && len(procmark.Find(other)) == 3 })
	began := time.Now()
	tree.Stop(300*time.Millisecond, exited)
	waitFor(t, "the stopped tree gone", func() bool { return len(procmark.Find(mine)) == 0 })
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("the tree took %v to end", d)
	}
	if n := len(procmark.Find(other)); n != 3 {
		t.Fatalf("the other run of the chat has %d of its 3 processes", n)
	}
}

// A tree that ignores SIGTERM is killed after the grace period.
func TestStopKillsWhatIgnoresTerm(t *testing.T) {
	m := procmark.Mark{Home: "home-" + t.Name()}.WithRun()
	cmd := exec.Command("bash", "-c", "trap '' TERM; setsid bash -c \"trap '' TERM; sleep 300\" & sleep 300")
	cmd.Env = os.Environ()
	tree, err := Start(cmd, m)
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	waitFor(t, "the tree up", func() bool { return len(procmark.Find(m)) >= 3 })
	tree.Stop(200*time.Millisecond, exited)
	<-exited
	waitFor(t, "the tree gone", func() bool { return len(procmark.Find(m)) == 0 })
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the command ended with %v, not SIGKILL", cmd.ProcessState)
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
