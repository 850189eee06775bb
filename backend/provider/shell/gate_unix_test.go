//go:build unix

package shell_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"conch/backend/output"
	"conch/backend/procmark"
	"conch/backend/provider/shell"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// heldRun is a run of command in dir that began before its start was
// stored: stored answers when the command may go.
func heldRun(t *testing.T, dir, command string, stored func() error) *taskrun.Run {
	t.Helper()
	w, err := output.New(t.TempDir()).Open("held")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return &taskrun.Run{
		Task:     task.Task{ID: "held", Text: command, Mode: task.Auto, Cwd: dir},
		Mark:     procmark.Mark{Home: "test-held-" + filepath.Base(dir), Task: "held"},
		Output:   w,
		Tail:     w.Tail,
		Progress: func(string, string) {},
		Launched: func(int, string, string) {},
		Stored:   stored,
	}
}

// A command started before its task's start was stored runs once the
// start is stored, and never when it is not: it ends at its gate, with
// the gate's fd closed for what it runs.
func TestAHeldCommandRunsOnlyOnceItsStartIsStored(t *testing.T) {
	s := &shell.Shell{Grace: time.Second}
	dir := t.TempDir()
	notStored := errors.New("not stored")
	_, err := s.Execute(context.Background(), heldRun(t, dir, "touch ran", func() error { return notStored }))
	if !errors.Is(err, notStored) {
		t.Fatalf("a command whose start was not stored ended with %v; want its store's error", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
		t.Fatalf("a command whose start was not stored ran (%v)", err)
	}
	let := make(chan struct{})
	go func() { time.Sleep(50 * time.Millisecond); close(let) }()
	out, err := s.Execute(context.Background(), heldRun(t, dir, "touch ran; [ ! -e /dev/fd/3 ] && echo no fd 3", func() error { <-let; return nil }))
	if err != nil || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Fatalf("a stored command ended %+v, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Fatalf("a command whose start was stored did not run: %v", err)
	}
	if out.Summary != "no fd 3" {
		t.Fatalf("the command saw %q; want its gate closed to it", out.Summary)
	}
}
