// Package chattask is the home of a task that is a chat of its own: the
// task side of its chat. Inside the slot the runner gave it, the helper's
// worktree is set up first (and settled after), then its chat runs turns
// for it (chat.Manager.RunFor) with report_result besides the host tools,
// its progress and questions going to the task, until it reports or the
// turn ends; its check verifies what it reported. Its spend is capped by
// its job and the chat it came from (Limits) and pauses at a limit; a
// provider that hits its usage limit hands the turn once to the
// preferences' limitFallback. The Follower brings what became of it back
// to the chat it came from: its events, its result, its taint, and a wake.
package chattask

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"conch/backend/ask"
	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/pref"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/tool"
)

// settleTimeout bounds looking at a helper's worktree after it ends (the
// task's own context may be over by then).
const settleTimeout = 30 * time.Second

// Config wires an Executor.
type Config struct {
	Chats *chat.Manager
	// Store is read for a job's chats (its cap) and a task's parent chat
	// (its limit): what Limits reads.
	Store store.Conversations
	// Log records what the person cannot act on; nil discards it.
	Log     *slog.Logger
	Engines engine.Lookup
	// Preferences are read at each use (limitFallback).
	Preferences func() pref.Preferences
	// Worktrees is where helpers' worktrees go (<home>/worktrees).
	Worktrees string
	// Now overrides time.Now (tests).
	Now func() time.Time
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Executor is the runner's executor for every task with a chat of its own.
type Executor struct {
	cfg   Config
	limit func(c conversation.Conversation) *chat.SpendLimitError

	mu    sync.Mutex
	ports map[int]string // the port ranges helpers hold, by base, to their task
}

var _ taskrun.Executor = (*Executor)(nil)

// New returns the executor.
func New(cfg Config) *Executor {
	if cfg.Preferences == nil {
		cfg.Preferences = pref.Defaults
	}
	return &Executor{cfg: cfg, limit: Limits(cfg.Store, cfg.Log)}
}

// Ready is always true: each task's own provider is asked when it starts.
func (x *Executor) Ready() (bool, string) { return true, "" }

// Execute runs a task's chat: its worktree's setup first, then one turn on
// the task's text until it reports or the turn ends.
func (x *Executor) Execute(ctx context.Context, run *taskrun.Run) (_ taskrun.Outcome, runErr error) {
	t := run.Task
	if t.Worktree != nil && t.Worktree.Path != "" {
		settle, err := x.openTree(ctx, run)
		if err != nil {
			return taskrun.Outcome{}, err
		}
		defer func() { settle(runErr) }()
	}
	b, drop := x.behalf(run)
	defer drop()
	res, err := x.turn(ctx, run, b, x.firstTurn(run))
	if err != nil {
		return taskrun.Outcome{Summary: res.summary}, err
	}
	summary := orNothing(res.summary)
	source := res.source
	if t.Check != "" {
		if summary, err = x.verify(ctx, run, b, summary); err != nil {
			return taskrun.Outcome{Summary: summary}, err
		}
		source = task.SourceCheck
	}
	return taskrun.Outcome{
		Summary: summary,
		Result:  &task.Result{Text: summary, Source: source, At: time.Now().UTC()},
	}, nil
}

// openTree readies a helper's worktree (made again if a retry finds it
// gone, then its setup run) and gives what settles it once the task ends.
func (x *Executor) openTree(ctx context.Context, run *taskrun.Run) (func(runErr error), error) {
	tree, err := x.tree(ctx, run)
	if err != nil {
		return nil, err
	}
	// Its setup carries the task's mark, as its commands do: a Conch that
	// dies while it runs leaves nothing healing cannot find.
	tree.Env = run.Mark.WithRun().Env(nil)
	settle := func(runErr error) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		rec, serr := tree.Settle(sctx)
		if serr != nil { // reported, never crashed on: the record says what is kept
			run.Progress("", "Worktree: "+serr.Error())
		}
		// A helper that did not finish (failed, stopped, or Conch closing)
		// has its work saved before anything could drop it.
		if runErr != nil || ctx.Err() != nil {
			rec = salvage(sctx, rec, run.Progress)
		}
		run.Amend(func(t *task.Task) { t.Worktree = &rec })
	}
	run.Progress("Setting up its worktree", "")
	if err := tree.Setup(ctx, run.Output); err != nil {
		settle(err)
		return nil, fmt.Errorf("The worktree's setup failed: %w", err)
	}
	return settle, nil
}

// behalf is how the task's chat runs for it: its progress, its questions
// and its log are the task's; a helper gets ports of its own (drop gives
// them back).
func (x *Executor) behalf(run *taskrun.Run) (chat.Behalf, func()) {
	b := chat.Behalf{
		Progress: progressOf(run.Progress),
		Ask: func(ctx context.Context, q ask.Question) ask.Answer {
			allowed, err := run.Ask(ctx, q)
			switch {
			case err == nil && allowed:
				return ask.Allowed
			case errors.Is(err, taskrun.ErrDeclined), err == nil:
				return ask.Declined
			case errors.Is(err, taskrun.ErrNoAnswer):
				return ask.TimedOut
			}
			return ask.Stopped
		},
		Answer: run.Answer,
		Output: run.Output,
	}
	t := run.Task
	if t.Kind != task.Helper {
		return b, func() {}
	}
	base := x.takePort(t.ID)
	if base == 0 {
		return b, func() {}
	}
	b.Env = []string{fmt.Sprintf("%s=%d", EnvPort, base)}
	b.Prompt = portPrompt(base)
	run.Progress("", fmt.Sprintf("Got ports %d–%d of its own", base, base+PortSpan-1))
	return b, func() { x.dropPort(base) }
}

// firstTurn is how the task's first turn of this run begins. A resumed
// task carries on with its whole transcript; any other run (the first, or
// Try again) starts its model's history afresh.
func (x *Executor) firstTurn(run *taskrun.Run) chat.Turn {
	t := run.Task
	if t.Resume == nil {
		return chat.Turn{Text: t.Text, Fresh: true}
	}
	res := *t.Resume
	if res.From == task.Failed && checkFailure(res.Reason, t.Check) {
		// Its chat holds the check's output already (verify told it).
		res.Reason = fmt.Sprintf("its check `%s` failed, as said above", t.Check)
	}
	turn := chat.Turn{Resume: resumeNotice(res), Left: run.Left}
	// Stopped before its first turn began (in its worktree's setup, say),
	// its chat holds nothing yet, not even what to do.
	if c, err := x.cfg.Chats.Snapshot(t.ConversationID); err == nil && c.LastSeq == 0 {
		turn.Text = t.Text
	}
	return turn
}

// result is what a task's turn came to.
type result struct {
	summary string
	// source is task.SourceReport (report_result) or task.SourceTurn (the
	// turn's last reply).
	source task.ResultSource
}

// runTurn runs one turn of the task's chat for it, with report_result
// besides the host tools: the report, else the turn's last reply.
func (x *Executor) runTurn(ctx context.Context, run *taskrun.Run, b chat.Behalf, turn chat.Turn) (result, error) {
	rep := &report{}
	b.Tools = []tool.Tool{rep.tool()}
	b.Done = rep.made
	reply, err := x.cfg.Chats.RunFor(ctx, run.Task.ConversationID, turn, b)
	switch {
	case err != nil:
		return result{summary: reply}, err
	case rep.summary != nil:
		return result{summary: *rep.summary, source: task.SourceReport}, nil
	}
	return result{summary: reply, source: task.SourceTurn}, nil
}

// resumeNotice is what the task's chat is told when it carries on: what
// happened, the last step, and to carry on.
func resumeNotice(r task.Resume) string {
	var what string
	switch r.From {
	case task.Interrupted:
		what = "Conch stopped while this was running"
	case task.Stopped:
		what = "The person stopped this task"
	default:
		what = "This task failed"
		if r.Reason != "" {
			what += " (" + strings.TrimSuffix(r.Reason, ".") + ")"
		}
	}
	if r.LastStep != "" {
		what += "; the last step was: " + r.LastStep
	}
	return "[" + what + ". Carry on from where it stopped; do not start over.]"
}
