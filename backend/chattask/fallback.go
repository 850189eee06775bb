package chattask

import (
	"conch/backend/chat"
	"conch/backend/engine"
	"conch/backend/task"
	"conch/backend/taskrun"
	"context"
	"fmt"
	"strings"
)

// carryOn hands a turn that hit a usage limit to the fallback, once, with
// the task's model choice kept; without one (or one that cannot take
// over) the limit stands and says why.
func (x *Executor) carryOn(ctx context.Context, run *taskrun.Run, b chat.Behalf, limit error) (result, error) {
	t := run.Task
	fb, why := x.fallback(ctx, t)
	if why != "" {
		return result{}, &fallbackError{err: limit, why: why}
	}
	if fb.ID == "" {
		return result{}, limit
	}
	from := x.cfg.Engines.Info(ctx, t.Provider)
	model := engine.CarryOver(from, fb, t.Model)
	if _, err := x.cfg.Chats.Patch(t.ConversationID, chat.PatchRequest{Provider: &fb.ID, Model: &model}); err != nil {
		return result{}, &fallbackError{err: limit, why: fmt.Sprintf("the fallback, %s, could not take over: %v", fb.Name(), err)}
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
	return x.runTurn(ctx, run, b, chat.Turn{})
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
