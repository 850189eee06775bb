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
// worktree is made here, in the repository holding its folder. Only the coding-
// agent CLIs found on this computer take such work; a request naming an
// id this runner has already is refused (409), so a request sent twice
// starts one task.
func (s *Service) StartSent(ctx context.Context, req taskrun.CreateRequest) (task.Task, error) {
	o := req.Options
	if err := sentFits(req); err != nil {
		return task.Task{}, err
	}
	retries, err := taskrun.ValidateRetries(o.Check, o.CheckRetries)
	if err != nil {
		return task.Task{}, err
	}
	e, err := engine.Pick(s.cfg.Engines.All(ctx), o.Provider, "", true)
	if err != nil {
		return task.Task{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if e.Info.Category != provider.CodingAgent {
		return task.Task{}, fmt.Errorf("%w: only the coding-agent CLIs run chat tasks on a host, not %s", ErrInvalid, e.Name())
	}
	model := o.Model
	if model == "" {
		model = e.Info.Models.Default
	}
	// One at a time: the id is looked for, then taken.
	s.sent.Lock()
	defer s.sent.Unlock()
	if _, err := s.cfg.Tasks.Get(o.ID); !errors.Is(err, taskrun.ErrNotFound) {
		if err == nil {
			err = fmt.Errorf("%w: a task with id %s exists already", taskrun.ErrConflict, o.ID)
		}
		return task.Task{}, err
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
