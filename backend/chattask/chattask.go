// Package chattask runs a task that is a chat of its own, inside the slot
// the runner gave it: the helper's worktree is set up first (and settled
// after), then one turn of the task's chat runs on its text until it
// reports or the turn ends. A provider that hits its usage limit hands the
// turn once to the preferences' limitFallback.
package chattask

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"conch/backend/ask"
	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/engine"
	"conch/backend/internal/quantity"
	"conch/backend/pref"
	"conch/backend/provider"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/tool"
	"conch/backend/worktree"
)

// settleTimeout bounds looking at a helper's worktree after it ends (the
// task's own context may be over by then).
const settleTimeout = 30 * time.Second

// Config wires an Executor.
type Config struct {
	Chats   *chat.Manager
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
	cfg Config

	mu    sync.Mutex
	ports map[int]string // the port ranges helpers hold, by base, to their task
}

// Ports: each helper gets a range of PortSpan ports of its own, from
// PortBase up, as CONCH_PORT (the first) in its commands' environment and
// its prompt, so the dev servers of helpers side by side never collide.
const (
	PortBase  = 42000
	PortSpan  = 10
	portRange = 100 // ranges to choose from
)

// EnvPort names a helper's first port.
const EnvPort = "CONCH_PORT"

// takePort gives task id the lowest range no other helper holds whose
// first port is free on this computer; 0 when none is.
func (x *Executor) takePort(id string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ports == nil {
		x.ports = map[int]string{}
	}
	for i := 0; i < portRange; i++ {
		base := PortBase + i*PortSpan
		if _, held := x.ports[base]; held {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base))
		if err != nil {
			continue // something else listens there
		}
		ln.Close()
		x.ports[base] = id
		return base
	}
	return 0
}

func (x *Executor) dropPort(base int) {
	x.mu.Lock()
	delete(x.ports, base)
	x.mu.Unlock()
}

// portPrompt tells a helper's model its ports.
func portPrompt(base int) string {
	return fmt.Sprintf("Ports %d to %d are yours alone ($%s=%d is set in your commands' environment): use them for any server you start, "+
		"so you do not collide with the other helpers working beside you.", base, base+PortSpan-1, EnvPort, base)
}

var _ taskrun.Executor = (*Executor)(nil)

// New returns the executor.
func New(cfg Config) *Executor {
	if cfg.Preferences == nil {
		cfg.Preferences = pref.Defaults
	}
	return &Executor{cfg: cfg}
}

// Ready is always true: each task's own provider is asked when it starts.
func (x *Executor) Ready() (bool, string) { return true, "" }

// Execute runs a task's chat: its worktree's setup first, then one turn on
// the task's text until it reports or the turn ends.
func (x *Executor) Execute(ctx context.Context, run *taskrun.Run) (_ taskrun.Outcome, runErr error) {
	t := run.Task
	if t.Worktree != nil && t.Worktree.Path != "" {
		tree, err := x.tree(ctx, run)
		if err != nil {
			return taskrun.Outcome{}, err
		}
		// Its setup carries the task's mark, as its commands do: a Conch
		// that dies while it runs leaves nothing healing cannot find.
		tree.Env = run.Mark.WithRun().Env(nil)
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
			defer cancel()
			rec, serr := tree.Settle(sctx)
			if serr != nil { // reported, never crashed on: the record says what is kept
				run.Progress("", "Worktree: "+serr.Error())
			}
			// A helper that did not finish (failed, stopped, or Conch
			// closing) has its work saved before anything could drop it.
			if runErr != nil || ctx.Err() != nil {
				rec = salvage(sctx, rec, run.Progress)
			}
			run.Amend(func(t *task.Task) { t.Worktree = &rec })
		}()
		run.Progress("Setting up its worktree", "")
		if err := tree.Setup(ctx, run.Output); err != nil {
			return taskrun.Outcome{}, fmt.Errorf("The worktree's setup failed: %w", err)
		}
	}
	hooks := chat.TaskHooks{
		Progress: run.Progress,
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
	if t.Kind == task.Helper {
		if base := x.takePort(t.ID); base > 0 {
			defer x.dropPort(base)
			hooks.Env = []string{fmt.Sprintf("%s=%d", EnvPort, base)}
			hooks.Prompt = portPrompt(base)
			run.Progress("", fmt.Sprintf("Got ports %d–%d of its own", base, base+PortSpan-1))
		}
	}
	// A resumed task carries on with its whole transcript; any other run
	// (the first, or Try again) starts its model's history afresh.
	turn := chat.TaskTurn{Text: t.Text, Fresh: true}
	if t.Resume != nil {
		res := *t.Resume
		if res.From == task.Failed && checkFailure(res.Reason, t.Check) {
			// Its chat holds the check's output already (verify told it).
			res.Reason = fmt.Sprintf("its check `%s` failed, as said above", t.Check)
		}
		turn = chat.TaskTurn{Resume: res.Notice(), Left: run.Left}
		// Stopped before its first turn began (in its worktree's setup,
		// say), its chat holds nothing yet, not even what to do.
		if c, err := x.cfg.Chats.Snapshot(t.ConversationID); err == nil && c.LastSeq == 0 {
			turn.Text = t.Text
		}
	}
	res, err := x.turn(ctx, run, hooks, turn)
	if err != nil {
		return taskrun.Outcome{Summary: res.Summary}, err
	}
	summary := orNothing(res.Summary)
	source := res.Source
	if t.Check != "" {
		if summary, err = x.verify(ctx, run, hooks, summary); err != nil {
			return taskrun.Outcome{Summary: summary}, err
		}
		source = task.SourceCheck
	}
	return taskrun.Outcome{
		Summary: summary,
		Result:  &task.Result{Text: summary, Source: source, At: time.Now().UTC()},
	}, nil
}

// turn runs one turn of the task's chat. A provider's usage limit hands it
// to the fallback; without one, a limit that says when it lifts pauses the
// task until then. A spend limit (its chat's, its job's, the month's)
// pauses it until the person raises it, the month turns, or Carry on. A
// Stop in its own chat stops the task.
func (x *Executor) turn(ctx context.Context, run *taskrun.Run, hooks chat.TaskHooks, turn chat.TaskTurn) (chat.TaskResult, error) {
	for {
		res, err := x.cfg.Chats.RunTask(ctx, run.Task.ConversationID, turn, hooks)
		if err != nil && errors.Is(err, provider.ErrLimit) && ctx.Err() == nil {
			res, err = x.carryOn(ctx, run, hooks, err)
		}
		if err == nil || ctx.Err() != nil {
			return res, err
		}
		if errors.Is(err, chat.ErrStopped) {
			// Stopped from its own chat: the task was stopped, not failed.
			return res, taskrun.ErrStopped
		}
		var spend *chat.SpendLimitError
		var limit *provider.LimitError
		var fb *fallbackError
		switch {
		case errors.As(err, &spend):
			if perr := x.pauseSpend(ctx, run, spend); perr != nil {
				return res, perr
			}
		case errors.As(err, &limit) && !errors.As(err, &fb) && waitable(limit.Until, x.cfg.now()):
			if perr := x.pauseUntil(ctx, run, limit); perr != nil {
				return res, perr
			}
		default:
			return res, err
		}
		turn = chat.TaskTurn{} // carry on from where the chat stands
	}
}

// pausePoll is how often a paused task looks whether it may spend again.
const pausePoll = 2 * time.Second

// longestWait is the longest a task waits out a provider's limit on its
// own; one that lifts later fails it, saying when.
const longestWait = 7 * 24 * time.Hour

func waitable(until, now time.Time) bool {
	return !until.IsZero() && until.Sub(now) < longestWait
}

// pauseSpend waits, paused, until the task's chat may spend again (the
// person raised the limit, or the month turned) or the person presses
// Carry on, which raises a job's cap once more.
func (x *Executor) pauseSpend(ctx context.Context, run *taskrun.Run, l *chat.SpendLimitError) error {
	id := run.Task.ConversationID
	run.Pause(task.Paused{Kind: "usage", Until: l.Until}, "Paused: "+strings.TrimPrefix(l.Message, "Stopped: "))
	defer run.Unpause()
	run.Progress("", "Paused at a spending limit")
	tick := time.NewTicker(pausePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-run.Woken:
			if l.Kind == chat.LimitJob {
				if next, err := x.cfg.Chats.RaiseJobCap(id); err == nil && next > 0 {
					run.Progress("", "You raised its job's cap to "+budget.USD(next))
				}
			}
			return nil
		case <-tick.C:
			if still, err := x.cfg.Chats.OverLimit(id); err == nil && still == nil {
				run.Progress("", "Carrying on: it may spend again")
				return nil
			}
		}
	}
}

// pauseUntil waits, paused, until a provider's limit lifts (or Carry on).
func (x *Executor) pauseUntil(ctx context.Context, run *taskrun.Run, l *provider.LimitError) error {
	at := l.Until.Local().Format("15:04")
	if l.Until.Sub(x.cfg.now()) > 20*time.Hour {
		at = l.Until.Local().Format("Mon 15:04")
	}
	name := engine.Engine{ID: run.Task.Provider, Info: x.cfg.Engines.Info(ctx, run.Task.Provider)}.Name()
	run.Pause(task.Paused{Kind: "usage", Until: l.Until}, fmt.Sprintf("Paused: %s's usage limit lifts at %s", name, at))
	defer run.Unpause()
	run.Progress("", fmt.Sprintf("Paused until %s: %s reached its usage limit", at, name))
	timer := time.NewTimer(time.Until(l.Until))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-run.Woken:
	case <-timer.C:
	}
	run.Progress("", "Carrying on after the usage limit")
	return nil
}

// verify runs the task's check once it has reported: a pass makes it done
// (verified); a failure gives its model the end of the check's output and
// another turn, CheckRetries times, then fails the task with that output.
// It returns the summary to keep.
func (x *Executor) verify(ctx context.Context, run *taskrun.Run, hooks chat.TaskHooks, summary string) (string, error) {
	t := run.Task
	told := "" // the end of the check's output its model was last told
	for try := 0; ; try++ {
		c, err := x.cfg.Chats.Snapshot(t.ConversationID)
		if err != nil {
			return summary, err
		}
		var askFirst bool
		switch chat.Gate(c.Mode, tool.Command, c.Tainted) {
		case chat.Refuse:
			return summary, fmt.Errorf("The check %q was not run: %s mode runs no commands", t.Check, c.Mode)
		case chat.AskFirst:
			askFirst = true
		}
		res, err := taskrun.RunCheck(ctx, run, c.Cwd, t.Check, askFirst)
		if err != nil {
			return summary, err
		}
		if res.Passed {
			return summary, nil
		}
		tail := strings.TrimSpace(res.Tail)
		said := checkSaid(t.Check, res.Words(), tail, told, try > 0)
		told = tail
		if try >= t.CheckRetries {
			// Its model reads the last failure in the transcript, so a
			// resumed task's notice need not say it again.
			if err := x.cfg.Chats.Tell(t.ConversationID, said); err != nil {
				run.Progress("", "Could not tell its chat how the check ended: "+err.Error())
			}
			if tail == "" {
				return summary, fmt.Errorf("The check `%s` %s, with no output.", t.Check, res.Words())
			}
			return summary, fmt.Errorf("The check `%s` %s. Its output ends:\n\n%s", t.Check, res.Words(), tail)
		}
		tell := said + "\n\n[Fix what it reports, then report again. The check runs again after you report.]"
		out, err := x.turn(ctx, run, hooks, chat.TaskTurn{Tell: tell})
		if err != nil {
			return out.Summary, err
		}
		summary = orNothing(out.Summary)
	}
}

// checkSaid is how a failed check is told to the task's model: with the
// end of its output, once; a check that failed again with the same output
// as it was last told says so instead of repeating it.
func checkSaid(check, words, tail, told string, again bool) string {
	switch {
	case again && tail == told:
		return fmt.Sprintf("[The check `%s` %s again, with the same output.]", check, words)
	case tail == "":
		return fmt.Sprintf("[The check `%s` %s, with no output.]", check, words)
	}
	return fmt.Sprintf("[The check `%s` %s. Its output ends:]\n\n```\n%s\n```", check, words, tail)
}

// checkFailure reports whether reason is the error verify failed a task
// with, after telling its model the check's output.
func checkFailure(reason, check string) bool {
	return check != "" && strings.HasPrefix(reason, "The check `"+check+"` ")
}

// orNothing is s, or a sentence saying there was nothing.
func orNothing(s string) string {
	if strings.TrimSpace(s) == "" {
		return "It finished without saying anything."
	}
	return s
}

// tree is the task's worktree, made again when a retry finds the empty one
// it had removed.
func (x *Executor) tree(ctx context.Context, run *taskrun.Run) (worktree.Tree, error) {
	t := run.Task
	tree := worktree.FromRecord(*t.Worktree)
	tree.Dir = t.Cwd
	if _, err := os.Stat(tree.Path); !errors.Is(err, fs.ErrNotExist) || t.Worktree.Kept {
		return tree, nil
	}
	parent, err := x.cfg.Chats.Snapshot(t.ParentConversationID)
	if err != nil {
		return tree, err
	}
	fresh, err := worktree.Add(ctx, parent.Cwd, x.cfg.Worktrees, t.ID)
	if err != nil {
		return tree, fmt.Errorf("Could not make its worktree again: %w", err)
	}
	run.Amend(func(t *task.Task) {
		t.Worktree = &task.Worktree{Path: fresh.Path, Branch: fresh.Branch, Base: fresh.Base}
	})
	return fresh, nil
}

// carryOn hands a turn that hit a usage limit to the fallback, once, with
// the task's model choice kept; without one (or one that cannot take
// over) the limit stands and says why.
func (x *Executor) carryOn(ctx context.Context, run *taskrun.Run, hooks chat.TaskHooks, limit error) (chat.TaskResult, error) {
	t := run.Task
	fb, why := x.fallback(ctx, t)
	if why != "" {
		return chat.TaskResult{}, &fallbackError{err: limit, why: why}
	}
	if fb.ID == "" {
		return chat.TaskResult{}, limit
	}
	from := x.cfg.Engines.Info(ctx, t.Provider)
	model := engine.CarryOver(from, fb, t.Model)
	if _, err := x.cfg.Chats.Patch(t.ConversationID, chat.PatchRequest{Provider: &fb.ID, Model: &model}); err != nil {
		return chat.TaskResult{}, &fallbackError{err: limit, why: fmt.Sprintf("the fallback, %s, could not take over: %v", fb.Name(), err)}
	}
	parent, _ := x.cfg.Chats.Snapshot(t.ParentConversationID)
	note := fmt.Sprintf("%s reached its limit, so %s carried on.", engine.Engine{ID: t.Provider, Info: from}.Name(), fb.Name())
	run.Amend(func(t *task.Task) {
		t.Provider, t.Model, t.Note = fb.ID, model, note
		t.By = ""
		if fb.ID != parent.Provider {
			t.By = fb.Name()
		}
	})
	run.Progress("", note)
	return x.cfg.Chats.RunTask(ctx, t.ConversationID, chat.TaskTurn{}, hooks)
}

// fallbackError is a limit the fallback could not take over from: the
// limit first, then why the fallback did not carry on.
type fallbackError struct {
	err error
	why string
}

func (e *fallbackError) Error() string { return e.err.Error() + ", and " + e.why }
func (e *fallbackError) Unwrap() error { return e.err }

// fallback is the provider a task at its limit carries on with: the
// preferences' limitFallback, when it is another provider, ready and able
// to ask. With none set (or the task's own provider) both are empty; why
// says why the one set cannot take over.
func (x *Executor) fallback(ctx context.Context, t task.Task) (engine.Engine, string) {
	id := x.cfg.Preferences().LimitFallback
	if id == "" || id == t.Provider {
		return engine.Engine{}, ""
	}
	e := engine.Engine{ID: id, Info: x.cfg.Engines.Info(ctx, id)}
	switch {
	case !e.Info.Ready:
		reason := e.Info.Reason
		if reason == "" {
			reason = "it gave no reason"
		}
		return engine.Engine{}, fmt.Sprintf("the fallback, %s, is not ready: %s", e.Name(), reason)
	case !e.Info.CanAsk:
		return engine.Engine{}, fmt.Sprintf("the fallback, %s, cannot ask before it acts, so it is never handed work", e.Name())
	}
	return e, ""
}

// CheckFallback refuses a limitFallback that could never carry a task on:
// one that is not connected, or cannot ask before it acts. One that is not
// ready now is accepted (it may be by the time a limit comes), and a task
// that meets it says so.
func (x *Executor) CheckFallback(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	reg := x.cfg.Engines.Providers
	if _, ok := reg.Provider(id); !ok {
		known := strings.Join(reg.IDs(), ", ")
		if known == "" {
			known = "none is connected yet"
		}
		return fmt.Errorf("%w: the fallback must be a connected provider, and none is called %q (connected: %s)", taskrun.ErrInvalid, id, known)
	}
	if e := (engine.Engine{ID: id, Info: x.cfg.Engines.Info(ctx, id)}); !e.Info.CanAsk {
		return fmt.Errorf("%w: %s cannot ask before it acts, so it can never carry a task on; pick another fallback", taskrun.ErrInvalid, e.Name())
	}
	return nil
}

// salvage saves the work a kept worktree holds to its salvage ref and
// records what it holds (SPEC §4.3); progress gets a step saying so.
func salvage(ctx context.Context, rec task.Worktree, progress func(current, step string)) task.Worktree {
	w := rec.Work
	if !rec.Kept || w.Changed+w.Untracked+w.Ahead == 0 {
		return rec
	}
	s, err := worktree.FromRecord(rec).Salvage(ctx)
	if err != nil {
		progress("", "Could not save its unfinished work: "+err.Error())
		return rec
	}
	rec.Salvage = &s
	if s.Ref != "" {
		progress("", fmt.Sprintf("Saved its unfinished work (%s) to %s", quantity.Plural(len(s.Files), "file", "files"), s.Ref))
	}
	return rec
}

// SettleLeft looks again at the worktrees of helpers that ended without
// settling them (a crash): one that holds work is kept and its work
// counted, so it shows on the card and is never removed without the
// person's say; an empty one is removed. Run it once the runner has healed.
func SettleLeft(tasks *taskrun.Runner) {
	all, _ := tasks.UnsettledWorktrees()
	for _, t := range all {
		w := t.Worktree
		if !t.Status.Finished() || w == nil || w.Kept || w.Path == "" {
			continue
		}
		if _, err := os.Stat(w.Path); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		rec, err := worktree.FromRecord(*w).Settle(ctx)
		var steps []string
		if err != nil {
			steps = append(steps, "Worktree: "+err.Error())
		}
		if t.Status != task.Done {
			rec = salvage(ctx, rec, func(_, step string) { steps = append(steps, step) })
		}
		cancel()
		_, _ = tasks.Amend(t.ID, func(t *task.Task) {
			t.Worktree = &rec
			for _, s := range steps {
				t.AddStep(s)
			}
		})
	}
}
