package chattask

import (
	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/engine"
	"conch/backend/provider"
	"conch/backend/task"
	"conch/backend/taskrun"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// turn runs one turn of the task's chat. A provider's usage limit hands it
// to the fallback; without one, a limit that says when it lifts pauses the
// task until then. A spend limit (its chat's, its job's, the month's)
// pauses it until the person raises it, the month turns, or Carry on. A
// Stop in its own chat stops the task.
func (x *Executor) turn(ctx context.Context, run *taskrun.Run, b chat.Behalf, turn chat.Turn) (result, error) {
	for {
		res, err := x.runTurn(ctx, run, b, turn)
		if err != nil && errors.Is(err, provider.ErrLimit) && ctx.Err() == nil {
			res, err = x.carryOn(ctx, run, b, err)
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
		turn = chat.Turn{} // carry on from where the chat stands
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
			if l.Kind == LimitJob {
				if next, err := x.raiseJobCap(id); err == nil && next > 0 {
					run.Progress("", "You raised its job's cap to "+budget.USD(next))
				}
			}
			return nil
		case <-tick.C:
			if still, err := x.overLimit(id); err == nil && still == nil {
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
