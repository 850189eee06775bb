package procmark

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

// A process made since the counters were read, in a session of its own,
// is found by its pid alone, and so is the one made before it is not
// reached; when the counters cannot rule out a wrap of pid numbers, every
// process is looked at.
func TestSignalSinceReachesWhatWasMadeAfter(t *testing.T) {
	before := Mark{Home: "home-" + t.Name(), Task: "old"}.WithRun()
	old := exec.Command("sleep", "60")
	old.Env = before.Env(os.Environ())
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Process.Kill(); _ = old.Wait() })

	mark := Mark{Home: "home-" + t.Name(), Task: "new"}.WithRun()
	s := Now()
	if !s.ok {
		t.Fatal("the process counters could not be read")
	}
	// The command leaves, its child in a session of its own stays.
	cmd := exec.Command("bash", "-c", "setsid sleep 60 & exit 0")
	cmd.Env = mark.Env(os.Environ())
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the escaped sleep", func() bool { return len(Find(mark)) == 1 })
	escaped := Find(mark)[0]
	t.Cleanup(func() { _ = syscall.Kill(escaped, syscall.SIGKILL) })

	if pids, ok := madeSince(s); ok {
		if !slices.Contains(pids, escaped) || slices.Contains(pids, old.Process.Pid) {
			t.Fatalf("made since: %v; want the escaped %d, not the older %d", pids, escaped, old.Process.Pid)
		}
		// A process from before is not looked at through the range.
		if n := SignalSince(before, s, syscall.Signal(0)); n != 0 {
			t.Fatalf("reached %d processes of a mark from before", n)
		}
	} else if last, _ := lastPid(); last >= s.last && last-s.last <= sinceRange {
		t.Fatalf("the range was not trusted though only %d pids were handed out", last-s.last)
	} // else the machine made more processes meanwhile than the range reads: every one is looked at
	if n := SignalSince(mark, s, syscall.SIGKILL); n != 1 {
		t.Fatalf("SIGKILL reached %d processes, want the escaped one", n)
	}
	waitFor(t, "the escaped sleep to end", func() bool { return len(Find(mark)) == 0 })

	// Counters that show a whole round of pid numbers, or pids going back,
	// or none read at all: the range is not trusted.
	limit, _ := pidMax()
	for name, bad := range map[string]Since{
		"a whole round made": {last: s.last, forks: s.forks - uint64(limit), ok: true},
		"pids went back":     {last: s.last + 1<<20, forks: s.forks, ok: true},
		"too many made":      {last: s.last - sinceRange - 1, forks: s.forks, ok: true},
		"unread":             {},
	} {
		if _, ok := madeSince(bad); ok {
			t.Errorf("%s: the range was trusted", name)
		}
	}
	again := exec.Command("bash", "-c", "setsid sleep 60 & exit 0")
	again.Env = mark.Env(os.Environ())
	if err := again.Run(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "another escaped sleep", func() bool { return len(Find(mark)) == 1 })
	if n := SignalSince(mark, Since{}, syscall.SIGKILL); n != 1 {
		t.Fatalf("the full look reached %d processes, want 1", n)
	}
	waitFor(t, "it to end", func() bool { return len(Find(mark)) == 0 })
}
