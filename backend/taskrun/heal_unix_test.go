//go:build unix

package taskrun_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"conch/backend/ask"
	"conch/backend/procmark"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// A Conch that died leaves a record saying running and a process group; the
// next start marks the task interrupted and ends the processes.
func TestHealingEndsLeftoverProcesses(t *testing.T) {
	b := setup(t)
	b.stop()

	id := "0b6f1a52-3c7e-4c39-9f57-7f0d3c1b9a10"
	cmd := exec.Command("bash", "-c", "sleep 60 & setsid sleep 60 & sleep 60; wait")
	cmd.Env = procmark.Mark{Home: b.mark, Task: id}.Env(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	// The same task id in a copy of this home: not this Conch's to end.
	other := exec.Command("bash", "-c", "sleep 60")
	other.Env = procmark.Mark{Home: "a-copy-of-" + b.mark, Task: id}.Env(os.Environ())
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	otherExited := make(chan struct{})
	go func() { _ = other.Wait(); close(otherExited) }()
	t.Cleanup(func() { _ = syscall.Kill(-other.Process.Pid, syscall.SIGKILL) })

	st, err := store.Open(b.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	left := task.Task{ID: id, Kind: task.Background, Status: task.Running, Title: "sleep", Text: "sleep 60",
		Provider: "shell", Mode: task.Auto, Cwd: b.dir, Pid: cmd.Process.Pid, CreatedAt: now, StartedAt: &now, Rev: 4}
	asking := task.Task{ID: "1b6f1a52-3c7e-4c39-9f57-7f0d3c1b9a11", Kind: task.Background, Status: task.NeedsYou,
		Title: "ask", Text: "ls", Provider: "shell", Mode: task.Ask, Cwd: b.dir, CreatedAt: now, Rev: 2,
		Ask: &ask.Question{ID: "q", Tool: "run_command"}}
	for _, tk := range []task.Task{left, asking} {
		if err := st.PutTask(tk); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	b.start(t)
	for _, id := range []string{left.ID, asking.ID} {
		got, err := b.runner.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != task.Interrupted || got.Error != taskrun.InterruptedReason || got.Ask != nil || got.Pid != 0 {
			t.Fatalf("healed: %+v", got)
		}
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the leftover process group still runs")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(procmark.Find(procmark.Mark{Home: b.mark, Task: id})) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a process of the leftover group (or its setsid child) still runs")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-otherExited:
		t.Fatal("healing ended a process of another home that had the same task id")
	case <-time.After(200 * time.Millisecond):
	}
}
