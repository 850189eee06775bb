//go:build unix

package procgroup

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestSignalReachesTheWholeGroup(t *testing.T) {
	cmd := exec.Command("bash", "-c", "sleep 30 & sleep 30 & wait")
	cmd.SysProcAttr = Attr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	time.Sleep(100 * time.Millisecond)
	Signal(pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("bash did not end")
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("a child of the group outlived the signal")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
