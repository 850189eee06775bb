package taskrun_test

import (
	"errors"
	"strings"
	"testing"

	"conch/backend/task"
	"conch/backend/taskrun"
)

func withCheck(b *bundle, t *testing.T, text, check string, mode task.Mode) task.Task {
	t.Helper()
	tk, err := b.runner.Create(taskrun.CreateRequest{Text: text, Options: taskrun.Options{Mode: string(mode), Cwd: b.dir, Check: check}})
	if err != nil {
		t.Fatalf("create %q: %v", text, err)
	}
	return tk
}

// A command's check runs after it, in its folder: a pass makes it done
// (verified), a failure fails it with the end of the check's output.
func TestACommandsCheckDecidesDone(t *testing.T) {
	b := setup(t)
	pass := withCheck(b, t, "echo made > out.txt", "grep -q made out.txt && echo checked", task.Auto)
	done := b.waitStatus(t, pass.ID, task.Done)
	if done.Result == nil || done.Result.Source != task.SourceCheck || done.Check == "" || done.CheckRetries != 1 {
		t.Fatalf("passed: %+v", done)
	}
	if out := b.output(t, pass.ID); !strings.Contains(out, "── check: grep -q made out.txt && echo checked ──\nchecked\n── the check passed ──") {
		t.Errorf("output: %q", out)
	}
	fail := withCheck(b, t, "true", "echo 'FAIL: TestThing' >&2; exit 3", task.Auto)
	failed := b.waitStatus(t, fail.ID, task.Failed)
	if !strings.Contains(failed.Error, "failed (exit 3)") || !strings.Contains(failed.Error, "FAIL: TestThing") || failed.Result != nil {
		t.Errorf("failed: %q %+v", failed.Error, failed.Result)
	}
}

// In ask mode the check asks as the command did; a Deny fails the task.
func TestACheckAsksInAskMode(t *testing.T) {
	b := setup(t)
	tk := withCheck(b, t, "true", "true", task.Ask)
	asking := b.waitStatus(t, tk.ID, task.NeedsYou)
	if _, err := b.runner.Answer(tk.ID, asking.Ask.ID, true); err != nil {
		t.Fatal(err)
	}
	check := b.waitFor(t, tk.ID, "asking about the check", func(x task.Task) bool {
		return x.Status == task.NeedsYou && x.Ask != nil && x.Ask.ID != asking.Ask.ID
	})
	if !strings.Contains(check.Ask.Detail, "Run the check `true`") {
		t.Fatalf("asked %q", check.Ask.Detail)
	}
	if _, err := b.runner.Answer(tk.ID, check.Ask.ID, false); err != nil {
		t.Fatal(err)
	}
	if failed := b.waitStatus(t, tk.ID, task.Failed); !strings.Contains(failed.Error, "declined") {
		t.Errorf("declined check: %q", failed.Error)
	}
}

func TestChecksAreRefusedWhereTheyCouldNeverRun(t *testing.T) {
	b := setup(t)
	three := 3
	for _, c := range []struct {
		name string
		o    taskrun.Options
		want string
	}{
		{"plan mode", taskrun.Options{Mode: "plan", Check: "go test ./..."}, "plan mode refuses"},
		{"too long", taskrun.Options{Mode: "auto", Check: strings.Repeat("x", taskrun.MaxCheck+1)}, "longer than 4 KiB"},
		{"NUL", taskrun.Options{Mode: "auto", Check: "true\x00"}, "NUL"},
		{"retries without a check", taskrun.Options{Mode: "auto", CheckRetries: &three}, "needs a check command"},
		{"too many retries", taskrun.Options{Mode: "auto", Check: "true", CheckRetries: new(int(taskrun.MaxCheckRetries + 1))}, "0 to 5"},
	} {
		c.o.Cwd = b.dir
		_, err := b.runner.Create(taskrun.CreateRequest{Text: "true", Options: c.o})
		if !errors.Is(err, taskrun.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
