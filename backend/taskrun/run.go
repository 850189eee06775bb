package taskrun

import (
	"context"
	"io"

	"conch/backend/ask"
	"conch/backend/procmark"
	"conch/backend/task"
)

// Executor does one task's work for one kind of provider. The runner owns the
// task's status; an executor only reports progress, asks, and returns.
type Executor interface {
	// Ready says whether the provider can take work now, and why not.
	Ready() (bool, string)
	// Execute runs the task until it ends or ctx is cancelled. A nil error
	// means done; any error fails the task with err.Error() as its reason,
	// unless the runner cancelled ctx (stop, shutdown).
	Execute(ctx context.Context, run *Run) (Outcome, error)
}

// Run is what an executor gets to work with for one run of a task.
type Run struct {
	// Task is a snapshot of the task as it started running.
	Task task.Task
	// Mark is what every process the run starts must carry (Mark.Env), so
	// healing after a crash finds them and nothing else.
	Mark procmark.Mark
	// Output is the task's append-only log.
	Output io.Writer
	// Tail returns up to n of the last bytes written to Output.
	Tail func(n int) string
	// Written is how many bytes the log holds, every run's.
	Written func() int64
	// Left is, for a resumed run, the end of the task's log as the run
	// before left it (at most LeftSize bytes): what a command that was
	// cut off when Conch stopped had printed. Empty on any other run.
	Left string
	// Progress sets what the task is doing now and appends a past-tense step;
	// either may be empty to leave it as it is.
	Progress func(current, step string)
	// Ask puts a permission question to the person and waits for the answer,
	// its expiry (ErrNoAnswer) or ctx. It reports whether the action was
	// allowed. A question with an id and an expiry (a chat's) keeps them;
	// give only Tool and Detail for a new one that expires after an hour.
	Ask func(ctx context.Context, q ask.Question) (bool, error)
	// Answer answers the task's pending question askID, as the person did
	// from the executor's own place (a task chat's Allow / Deny).
	Answer func(askID string, allow bool) error
	// Amend changes the task's record (its provider, by, note, worktree)
	// but never its status.
	Amend func(fn func(t *task.Task))
	// Started records the process group the task runs in, so that a Conch
	// that dies can end it at its next start.
	Started func(pid int)
	// Launched is Started and Progress in one change: a command's start
	// costs the store one write, not two.
	Launched func(pid int, current, step string)
	// Pause marks the task as waiting out a limit (p; Until when it lifts
	// by itself), current saying what would lift it. While paused it
	// gives up its slot; Unpause takes one back.
	Pause   func(p task.Paused, current string)
	Unpause func()
	// Woken is signalled when the person presses Resume (Carry on) on the
	// paused task.
	Woken <-chan struct{}
	// Reattach says the run carries on one that a Conch that stopped left
	// working on the task's host: the work goes on there, and the run
	// follows it rather than starting it.
	Reattach bool
	// Stored is set for an EarlyStarter's run that began while the write
	// marking its task running was in flight: it waits for that write. Its
	// work may start its process first, held so that it runs nothing, and
	// lets it go only once Stored returns nil; an error means the task
	// never started, and the work ends at once having run nothing. Every
	// other report of the run waits for the write itself. Nil: the start
	// is stored already.
	Stored func() error
}

// EarlyStarter is an Executor whose work can begin while its task's start
// is still being stored (see Run.Stored), so that a task's start overlaps
// the write that ends the task before it in the same slot.
type EarlyStarter interface {
	Executor
	// StartsEarly says whether it can, here.
	StartsEarly() bool
}

// LeftSize bounds Run.Left.
const LeftSize = 64 << 10

// Outcome is what a finished run produced.
type Outcome struct {
	Summary  string
	Result   *task.Result
	ExitCode *int
	// Steps are the run's last steps, added with its final status (one
	// write for both).
	Steps []string
}

// EnvTaskID is the part of a process's mark that names its task (see
// procmark): healing recognises what a Conch that died left behind by it
// and the home's mark together.
const EnvTaskID = procmark.EnvTask
