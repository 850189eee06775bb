package taskrun

// A task's check command is the proof that it is done (SPEC §4.2): a real
// bash process in the task's folder, under the task's mode (it asks first
// when the mode says so), its output in the task's log, its whole tree
// stopped with the task.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"conch/backend/ask"
	"conch/backend/internal/procgroup"
	"conch/backend/internal/proctree"
)

// checkGrace is how long a stopped check has between SIGTERM and SIGKILL.
const checkGrace = 1500 * time.Millisecond

// CheckTimeout bounds one run of a check: a check that hangs fails.
const CheckTimeout = 30 * time.Minute

// checkTail is how much of the end of its output a result keeps.
const checkTail = 4 << 10

// CheckResult is how a check came out.
type CheckResult struct {
	// Passed is true when it exited 0.
	Passed bool
	// Code is its exit code; -1 when a signal ended it.
	Code int
	// Tail is the end of its output (at most 4 KiB, whole lines).
	Tail string
}

// Words says how it came out, for a step: "passed", "failed (exit 1)".
func (r CheckResult) Words() string {
	switch {
	case r.Passed:
		return "passed"
	case r.Code < 0:
		return "was killed"
	}
	return fmt.Sprintf("failed (exit %d)", r.Code)
}

// ErrCheckDeclined is returned when the person said no to running the check.
var ErrCheckDeclined = errors.New("the check was not run: you declined it")

// RunCheck runs command with bash in dir for run's task. With askFirst the
// person is asked first. An error means the check could not run (declined,
// no bash, stopped); a check that ran and failed is a CheckResult.
func RunCheck(ctx context.Context, run *Run, dir, command string, askFirst bool) (CheckResult, error) {
	short := checkShort(command)
	if askFirst {
		run.Progress("", "Asked to run the check "+short)
		ok, err := run.Ask(ctx, ask.Question{Tool: "run_command", Detail: fmt.Sprintf("Run the check `%s` in %s?", command, dir)})
		if err != nil {
			return CheckResult{}, err
		}
		if !ok {
			return CheckResult{}, ErrCheckDeclined
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return CheckResult{}, errors.New("the check was not run: bash was not found on PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	tail := &checkTailWriter{}
	lead := "" // a line of its own, after output that did not end one
	if run.Tail != nil {
		if last := run.Tail(1); last != "" && last != "\n" {
			lead = "\n"
		}
	}
	fmt.Fprintf(run.Output, "%s── check: %s ──\n", lead, command)
	cmd := exec.Command(bash, "-c", command)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	out := &checkBoth{a: run.Output, b: tail}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	run.Progress("Checking: "+short, "")
	tree, err := proctree.Start(cmd, run.Mark.WithRun())
	if err != nil {
		return CheckResult{}, fmt.Errorf("the check was not run: %w", err)
	}
	defer tree.Release()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-ctx.Done():
		tree.Stop(checkGrace, exited)
		<-exited
	}
	tree.End()
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return CheckResult{}, context.Cause(ctx)
	}
	res := CheckResult{Code: -1, Tail: tail.String()}
	if st := cmd.ProcessState; st != nil {
		res.Code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Code = -1
			res.Tail = strings.TrimSpace(res.Tail + "\n(killed by " + procgroup.SignalName(ws.Signal()) + ")")
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.Code = -1
		res.Tail = strings.TrimSpace(res.Tail + fmt.Sprintf("\n(stopped after %s)", CheckTimeout))
	}
	res.Passed = res.Code == 0
	fmt.Fprintf(run.Output, "── the check %s ──\n", res.Words())
	run.Progress("", "The check "+short+" "+res.Words())
	return res, nil
}

// checkShort makes a command fit on one line of a step.
func checkShort(command string) string {
	line, _, cut := strings.Cut(strings.TrimSpace(command), "\n")
	if r := []rune(line); len(r) > 60 {
		line, cut = string(r[:59]), true
	}
	if cut {
		line += "…"
	}
	return "`" + line + "`"
}

// checkBoth writes to a and b (a's errors are a's writer's to report).
type checkBoth struct {
	a, b interface{ Write([]byte) (int, error) }
}

func (w *checkBoth) Write(p []byte) (int, error) {
	_, _ = w.b.Write(p)
	return w.a.Write(p)
}

// checkTailWriter keeps the last checkTail written.
type checkTailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *checkTailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*checkTail {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-checkTail:]...)
	}
	return len(p), nil
}

// String is the tail, starting at a line and never inside a rune.
func (t *checkTailWriter) String() string {
	t.mu.Lock()
	b := t.buf
	if len(b) > checkTail {
		b = b[len(b)-checkTail:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	s := string(b)
	t.mu.Unlock()
	for len(s) > 0 && s[0]&0xC0 == 0x80 {
		s = s[1:]
	}
	return strings.TrimRight(s, "\n")
}
