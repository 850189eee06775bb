package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/provider"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// StartSent starts, on a host's runner, a chat task another Conch sent it
// (SPEC §6): under the id it has there, in a chat of its own with no chat
// above it here. The task that sent it stands where a parent chat would:
// its mode, folder, taint and spend limit, never more; a helper's
// worktree is made here, in the repository holding its folder. The
// coding-agent CLIs found on this computer take such work, and an API
// model lent with it (Lend: kept in memory for that task only); a request
// naming an id this runner has already is refused (409), so a request
// sent twice starts one task.
func (s *Service) StartSent(ctx context.Context, req taskrun.CreateRequest) (task.Task, error) {
	o := req.Options
	if err := sentFits(req); err != nil {
		return task.Task{}, err
	}
	retries, err := taskrun.ValidateRetries(o.Check, o.CheckRetries)
	if err != nil {
		return task.Task{}, err
	}
	// One at a time: the id is looked for, then taken.
	s.sent.Lock()
	defer s.sent.Unlock()
	if _, err := s.cfg.Tasks.Get(o.ID); !errors.Is(err, taskrun.ErrNotFound) {
		if err == nil {
			// A task there is sent again only to run again (retry, resume):
			// its provider, let go of when it ended, is lent again.
			if o.Lend != nil {
				if lerr := s.lend(o); lerr != nil {
					return task.Task{}, lerr
				}
			}
			err = fmt.Errorf("%w: a task with id %s exists already", taskrun.ErrConflict, o.ID)
		}
		return task.Task{}, err
	}
	if o.Lend != nil {
		if err := s.lend(o); err != nil {
			return task.Task{}, err
		}
	}
	t, err := s.startSent(ctx, req, retries)
	if err != nil && o.Lend != nil {
		s.cfg.Lender.Unlend(o.ID)
	}
	return t, err
}

// lend takes the provider a sent task was lent, for that task.
func (s *Service) lend(o taskrun.Options) error {
	if s.cfg.Lender == nil {
		return fmt.Errorf("%w: this Conch takes no lent providers", ErrInvalid)
	}
	if o.Lend.Provider.ID != o.Provider {
		return fmt.Errorf("%w: the provider lent (%q) is not the task's (%q)", ErrInvalid, o.Lend.Provider.ID, o.Provider)
	}
	if err := s.cfg.Lender.Lend(o.ID, o.Lend.Provider, o.Lend.Key); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// startSent makes the chat and the task of a sent request, its id free.
func (s *Service) startSent(ctx context.Context, req taskrun.CreateRequest, retries int) (task.Task, error) {
	o := req.Options
	e, err := engine.Pick(s.cfg.Engines.All(ctx), o.Provider, "", true)
	if err != nil {
		return task.Task{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch c := e.Info.Category; {
	case c == provider.CodingAgent:
	case o.Lend != nil && (c == provider.ChatOnly || c == provider.LocalModel):
	default:
		return task.Task{}, fmt.Errorf("%w: only the coding-agent CLIs here, and API models lent with the task, run chat tasks sent to a host, not %s", ErrInvalid, e.Name())
	}
	model := o.Model
	if model == "" {
		model = e.Info.Models.Default
	}
	above := conversation.Conversation{Provider: e.ID, Model: model, Mode: task.Mode(o.Mode), Cwd: filepath.Clean(o.Cwd),
		Tainted: o.Tainted, Limit: o.Limit}
	kind := o.Kind
	if kind == "" {
		kind = task.Background
	}
	sp := spec{kind: kind, title: req.Title, text: req.Text, engine: e, model: model, mode: above.Mode,
		wake: task.WakeNone, parentEngine: e.ID, check: o.Check, checkRetries: retries, worktree: o.Worktree}
	return s.startWithID(ctx, o.ID, above, sp)
}

// sentFits checks what only a sent task's request must hold: the id it
// has where it came from, a mode, and a folder here that exists.
func sentFits(req taskrun.CreateRequest) error {
	o := req.Options
	if u, err := uuid.Parse(o.ID); err != nil || u.String() != o.ID {
		return fmt.Errorf("%w: a task sent to a host carries the id it has where it came from (a uuid)", ErrInvalid)
	}
	if !task.Mode(o.Mode).Valid() {
		return fmt.Errorf("%w: unknown mode %q (plan, ask, edits or auto)", ErrInvalid, o.Mode)
	}
	if o.Kind != "" && !o.Kind.Valid() {
		return fmt.Errorf("%w: unknown kind %q (background or helper)", ErrInvalid, o.Kind)
	}
	if o.Limit < 0 {
		return fmt.Errorf("%w: limit must be 0 (none) or more", ErrInvalid)
	}
	if !filepath.IsAbs(o.Cwd) {
		return fmt.Errorf("%w: folder %q is not an absolute path", ErrInvalid, o.Cwd)
	}
	if fi, err := os.Stat(o.Cwd); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: folder %s does not exist on this computer", ErrInvalid, o.Cwd)
	}
	return taskrun.ValidateText(req.Text, req.Title)
}
