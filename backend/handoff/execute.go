package handoff

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"conch/backend/ask"
	"conch/backend/chat"
	"conch/backend/provider"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/worktree"
)

// Ready is always true: each task's own provider is asked when it starts.
func (s *Service) Ready() (bool, string) { return true, "" }

// settleTimeout bounds looking at a helper's worktree after it ends (the
// task's own context may be over by then).
const settleTimeout = 30 * time.Second

// Execute runs a task's chat: its worktree's setup first, then one turn on
// the task's text until it reports or the turn ends. A provider that hits
// its usage limit hands the turn once to the preferences' limitFallback.
func (s *Service) Execute(ctx context.Context, run *taskrun.Run) (out taskrun.Outcome, err error) {
	t := run.Task
	if t.Worktree != nil && t.Worktree.Path != "" {
		tree := worktree.FromRecord(*t.Worktree)
		tree.Dir = t.Cwd
		if _, err := os.Stat(tree.Path); errors.Is(err, fs.ErrNotExist) && !t.Worktree.Kept {
			// Tried again after its empty worktree was removed: make a new one.
			parent, perr := s.cfg.Chats.Snapshot(t.ParentConversationID)
			if perr != nil {
				return taskrun.Outcome{}, perr
			}
			fresh, aerr := worktree.Add(ctx, parent.Cwd, s.cfg.Worktrees, t.ID)
			if aerr != nil {
				return taskrun.Outcome{}, fmt.Errorf("Could not make its worktree again: %w", aerr)
			}
			tree = fresh
			run.Amend(func(t *task.Task) {
				t.Worktree = &task.Worktree{Path: fresh.Path, Branch: fresh.Branch, Base: fresh.Base}
			})
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
			defer cancel()
			rec, serr := tree.Settle(sctx)
			if serr != nil { // reported, never crashed on: the record says what is kept
				run.Progress("", "Worktree: "+serr.Error())
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
		Answer: func(askID string, allow bool) error {
			_, err := s.tasks.Answer(t.ID, askID, allow)
			return err
		},
		Output: run.Output,
	}
	res, err := s.cfg.Chats.RunTask(ctx, t.ConversationID, t.Text, hooks)
	if err != nil && errors.Is(err, provider.ErrLimit) && ctx.Err() == nil {
		fb, why := s.fallback(ctx, t)
		switch {
		case why != "":
			err = &fallbackError{err: err, why: why}
		case fb.id != "":
			from := s.infoOf(ctx, t.Provider)
			model := fallbackModel(from, fb, t.Model)
			if _, perr := s.cfg.Chats.Patch(t.ConversationID, chat.PatchRequest{Provider: &fb.id, Model: &model}); perr != nil {
				err = &fallbackError{err: err, why: fmt.Sprintf("the fallback, %s, could not take over: %v", fb.name(), perr)}
				break
			}
			parent, _ := s.cfg.Chats.Snapshot(t.ParentConversationID)
			note := fmt.Sprintf("%s reached its limit, so %s carried on.", engine{id: t.Provider, info: from}.name(), fb.name())
			run.Amend(func(t *task.Task) {
				t.Provider, t.Model, t.Note = fb.id, model, note
				t.By = ""
				if fb.id != parent.Provider {
					t.By = fb.name()
				}
			})
			run.Progress("", note)
			res, err = s.cfg.Chats.RunTask(ctx, t.ConversationID, "", hooks)
		}
	}
	if err != nil {
		if errors.Is(err, chat.ErrStopped) && ctx.Err() == nil {
			// Stopped from its own chat: the task was stopped, not failed.
			return taskrun.Outcome{Summary: res.Summary}, taskrun.ErrStopped
		}
		return taskrun.Outcome{Summary: res.Summary}, err
	}
	summary := res.Summary
	if summary == "" {
		summary = "It finished without saying anything."
	}
	return taskrun.Outcome{
		Summary: summary,
		Result:  &task.Result{Text: summary, Source: res.Source, At: time.Now().UTC()},
	}, nil
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
func (s *Service) fallback(ctx context.Context, t task.Task) (fb engine, why string) {
	id := s.cfg.Preferences().LimitFallback
	if id == "" || id == t.Provider {
		return engine{}, ""
	}
	info := s.infoOf(ctx, id)
	e := engine{id: id, info: info}
	switch {
	case !info.Ready:
		reason := info.Reason
		if reason == "" {
			reason = "it gave no reason"
		}
		return engine{}, fmt.Sprintf("the fallback, %s, is not ready: %s", e.name(), reason)
	case !info.CanAsk:
		return engine{}, fmt.Sprintf("the fallback, %s, cannot ask before it acts, so it is never handed work", e.name())
	}
	return e, ""
}

// CheckFallback refuses a limitFallback that could never carry a task on:
// one that is not connected, or cannot ask before it acts. One that is not
// ready now is accepted (it may be by the time a limit comes), and a task
// that meets it says so.
func (s *Service) CheckFallback(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	if _, ok := s.cfg.Providers.Provider(id); !ok {
		known := strings.Join(s.cfg.Providers.IDs(), ", ")
		if known == "" {
			known = "none is connected yet"
		}
		return fmt.Errorf("%w: the fallback must be a connected provider, and none is called %q (connected: %s)", ErrInvalid, id, known)
	}
	if info := s.infoOf(ctx, id); !info.CanAsk {
		return fmt.Errorf("%w: %s cannot ask before it acts, so it can never carry a task on; pick another fallback", ErrInvalid, engine{id: id, info: info}.name())
	}
	return nil
}

// fallbackModel keeps a task's model choice on the provider that carries
// on: its fast model stays fast, a model the fallback also has stays, and
// anything else becomes the fallback's default.
func fallbackModel(from provider.Info, fb engine, model string) string {
	m := fb.info.Models
	switch {
	case model != "" && model == from.Models.Fast && m.Fast != "":
		return m.Fast
	case model != "" && slices.Contains(m.List, model):
		return model
	}
	return m.Default
}

// addWorktree gives t its own worktree of the repository holding dir; a
// folder outside git is shared, and the card says so.
func (s *Service) addWorktree(ctx context.Context, t *task.Task, dir string) error {
	tree, err := worktree.Add(ctx, dir, s.cfg.Worktrees, t.ID)
	if errors.Is(err, worktree.ErrNotRepo) {
		t.Note = "Not in a git repository, so it shares the folder."
		return nil
	}
	if err != nil {
		return fmt.Errorf("Could not make its worktree: %w", err)
	}
	t.Cwd = tree.Dir
	t.Worktree = &task.Worktree{Path: tree.Path, Branch: tree.Branch, Base: tree.Base}
	return nil
}

// RemoveWorktree removes a finished helper's kept worktree and its branch.
// One that holds work (edits, commits, an unfinished merge) is removed only
// with confirm, the person's explicit say; without it the answer is a
// conflict saying what would be lost. A worktree deleted by hand is cleaned
// up and reported.
func (s *Service) RemoveWorktree(ctx context.Context, id string, confirm bool) (task.Task, error) {
	t, err := s.tasks.Get(id)
	if err != nil {
		return task.Task{}, err
	}
	if t.Worktree == nil || !t.Worktree.Kept {
		return t, fmt.Errorf("it keeps no worktree: %w", taskrun.ErrConflict)
	}
	if !t.Status.Finished() {
		return t, fmt.Errorf("it is %s; stop it before removing its worktree: %w", t.Status.Words(), taskrun.ErrConflict)
	}
	tree := worktree.FromRecord(*t.Worktree)
	err = tree.Remove(ctx, confirm)
	switch {
	case errors.Is(err, worktree.ErrHasWork):
		return t, fmt.Errorf("its worktree holds work (%s); confirm to remove it and its branch %s: %w", describeWork(t.Worktree.Work), t.Worktree.Branch, taskrun.ErrConflict)
	case errors.Is(err, worktree.ErrLocked):
		return t, fmt.Errorf("%v: %w", err, taskrun.ErrConflict)
	case err != nil && !errors.Is(err, worktree.ErrMissing):
		return t, err
	}
	return s.tasks.Amend(id, func(t *task.Task) {
		t.Worktree.Kept = false
		t.AddStep("You removed its worktree and branch")
	})
}

// describeWork says what a worktree holds, for the person.
func describeWork(w task.WorktreeWork) string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(w.Changed, "changed file", "changed files")
	add(w.Untracked, "new file", "new files")
	add(w.Ahead, "commit", "commits")
	if w.Operation != "" {
		parts = append(parts, "an unfinished "+w.Operation)
	}
	if len(parts) == 0 {
		return "work git reports"
	}
	return strings.Join(parts, ", ")
}
