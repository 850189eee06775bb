// Package shell is the built-in provider: it runs a task's text as a bash
// command in the task's folder, in a process group of its own.
package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"conch/backend/ask"
	"conch/backend/internal/procgroup"
	"conch/backend/internal/proctree"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// StopGrace is how long a stopped tree has between SIGTERM and SIGKILL:
// a stop ends everything within two seconds (SPEC §3 Processes).
const StopGrace = 1500 * time.Millisecond

// summaryBytes bounds a task's summary: the last lines of its output.
const summaryBytes = 2000

// summaryLines is how many of the last lines make the summary.
const summaryLines = 12

// Shell runs bash commands. It is always ready where bash exists.
type Shell struct {
	// Bash is the shell's path; empty looks up "bash" on PATH.
	Bash string
	// Home is shown as ~ in questions.
	Home string
	// Grace overrides StopGrace (tests).
	Grace time.Duration

	mu    sync.Mutex
	found string // bash as last looked up on PATH
}

// Ready reports whether bash can be found.
func (s *Shell) Ready() (bool, string) {
	if _, err := s.bash(); err != nil {
		return false, "bash was not found on PATH"
	}
	return true, ""
}

func (s *Shell) bash() (string, error) {
	if s.Bash != "" {
		return s.Bash, nil
	}
	// Where bash was found stays where it is: one stat, not a walk of PATH
	// for every command.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.found != "" {
		if fi, err := os.Stat(s.found); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return s.found, nil
		}
	}
	p, err := exec.LookPath("bash")
	if err != nil {
		s.found = ""
		return "", err
	}
	s.found = p
	return p, nil
}

// Execute asks when the mode says so, then runs the command and waits.
func (s *Shell) Execute(ctx context.Context, run *taskrun.Run) (taskrun.Outcome, error) {
	t := run.Task
	command := strings.TrimSpace(t.Text)
	short := shorten(command)
	if err := s.permit(ctx, run, command, short); err != nil {
		return taskrun.Outcome{}, err
	}
	cmd, tree, err := s.start(ctx, run, short)
	if err != nil {
		return taskrun.Outcome{}, err
	}
	waitErr := s.wait(ctx, cmd, tree)
	summary := lastLines(run.Tail(summaryBytes * 2))
	state := cmd.ProcessState
	if state == nil {
		return taskrun.Outcome{Summary: summary}, fmt.Errorf("run %s: %w", short, waitErr)
	}
	out, err := exited(run, state, summary)
	if err != nil || t.Check == "" {
		return out, err
	}
	return check(ctx, run, out)
}

// permit refuses the command in plan mode and asks the person in ask and
// edits mode; nil means it may run.
func (s *Shell) permit(ctx context.Context, run *taskrun.Run, command, short string) error {
	t := run.Task
	switch t.Mode {
	case task.Plan:
		run.Progress("", "Refused to run "+short+" in plan mode")
		return taskrun.ErrPlanMode
	case task.Ask, task.Edits:
		run.Progress("", "Asked to run "+short)
		detail := fmt.Sprintf("Run `%s` in %s?", command, s.tilde(t.Cwd))
		allowed, err := run.Ask(ctx, ask.Question{Tool: "run_command", Detail: detail})
		if err != nil {
			return err
		}
		if !allowed {
			return taskrun.ErrDeclined
		}
	}
	return nil
}

// start starts the task's text with bash in the task's folder, its output
// going to the task's log. A run that began before its task's start was
// stored has its command held at a gate until it is (see held).
func (s *Shell) start(ctx context.Context, run *taskrun.Run, short string) (*exec.Cmd, *proctree.Tree, error) {
	t := run.Task
	bash, err := s.bash()
	if err != nil {
		return nil, nil, errors.New("bash was not found on PATH")
	}
	cmd := exec.Command(bash, "-c", t.Text)
	cmd.Dir = t.Cwd
	cmd.Env = os.Environ()
	cmd.Stdout = run.Output
	cmd.Stderr = run.Output
	// A background child that keeps the output pipe open must not hold the
	// task open for ever once bash itself has exited.
	cmd.WaitDelay = time.Second
	g, err := s.gate(cmd, run)
	if err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", short, err)
	}
	// The whole tree carries the task's mark and this run's, so a stop (or
	// healing after a crash) ends all of it, wherever a child went.
	tree, err := proctree.Start(cmd, run.Mark.WithRun())
	g.started()
	if err != nil {
		g.shut()
		return nil, nil, fmt.Errorf("start %s: %w", short, err)
	}
	run.Launched(tree.Pid(), "Running "+short, "Started "+short)
	if err := g.let(ctx, run); err != nil {
		// It ends at its gate, having run nothing.
		_ = cmd.Wait()
		tree.End()
		tree.Release()
		return nil, nil, err
	}
	return cmd, tree, nil
}

// wait waits for the command, stopping its tree when ctx is done, and
// returns the wait's error once nothing of the tree is left.
func (s *Shell) wait(ctx context.Context, cmd *exec.Cmd, tree *proctree.Tree) error {
	defer tree.Release()
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-ctx.Done():
		tree.Stop(s.grace(), exited)
		<-exited
	}
	// What the command left running goes with it: a task is over when its
	// command is.
	tree.End()
	return waitErr
}

// exited is the outcome of a command that ended as state says: killed by
// a signal, failed with its exit code, or done with its last lines as the
// result.
func exited(run *taskrun.Run, state *os.ProcessState, summary string) (taskrun.Outcome, error) {
	code := state.ExitCode()
	out := taskrun.Outcome{Summary: summary}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := procgroup.SignalName(ws.Signal())
		run.Progress("", "Killed by "+sig)
		return out, fmt.Errorf("killed by %s", sig)
	}
	out.ExitCode = &code
	out.Steps = []string{fmt.Sprintf("Exited with code %d", code)}
	if code != 0 {
		return out, fmt.Errorf("exited with code %d", code)
	}
	out.Result = &task.Result{Text: summary, Source: task.SourceExit, At: time.Now().UTC()}
	return out, nil
}

// check runs the task's check after its command succeeded: out keeps its
// result only when the check passes.
func check(ctx context.Context, run *taskrun.Run, out taskrun.Outcome) (taskrun.Outcome, error) {
	t := run.Task
	// The check's steps come after the command's end.
	run.Progress("", out.Steps[0])
	out.Steps = nil
	// The command ran; its check says whether it did what it should. It
	// asks first where the command did.
	res, err := taskrun.RunCheck(ctx, run, t.Cwd, t.Check, t.Mode == task.Ask || t.Mode == task.Edits)
	if err != nil {
		out.Result = nil
		return out, err
	}
	if !res.Passed {
		out.Result = nil
		tail := strings.TrimSpace(res.Tail)
		if tail == "" {
			return out, fmt.Errorf("The check `%s` %s, with no output.", t.Check, res.Words())
		}
		return out, fmt.Errorf("The check `%s` %s. Its output ends:\n\n%s", t.Check, res.Words(), tail)
	}
	out.Result.Source = task.SourceCheck
	return out, nil
}

// grace is how long a stopped command has between SIGTERM and SIGKILL.
func (s *Shell) grace() time.Duration {
	if s.Grace == 0 {
		return StopGrace
	}
	return s.Grace
}

func (s *Shell) tilde(dir string) string {
	if s.Home == "" {
		return dir
	}
	if dir == s.Home {
		return "~"
	}
	if rel, err := filepath.Rel(s.Home, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return "~/" + rel
	}
	return dir
}

// shorten makes a command fit on one line of a card.
func shorten(command string) string {
	line := command
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i] + " …"
	}
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}

// lastLines keeps the last lines of output, bounded in lines and bytes.
func lastLines(tail string) string {
	tail = strings.TrimRight(tail, "\n\r\t ")
	lines := strings.Split(tail, "\n")
	if len(lines) > summaryLines {
		lines = lines[len(lines)-summaryLines:]
	}
	s := strings.Join(lines, "\n")
	if len(s) > summaryBytes {
		s = s[len(s)-summaryBytes:]
		for len(s) > 0 && s[0]&0xC0 == 0x80 { // do not start inside a rune
			s = s[1:]
		}
	}
	return s
}
