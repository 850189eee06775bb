package handoff

import (
	"context"
	"fmt"

	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/routine"
	"conch/backend/store"
	"conch/backend/task"
)

// StartRoutine starts one run of a routine as a background task in a chat
// of its own (origin routine, no chat above it): a prompt on the
// routine's provider and model, a command on the shell (its chat runs the
// command). Its powers are exactly the routine's mode and folder, and it
// asks, notifies and shows as any task; nobody is woken, for no chat
// waits on it. A provider that is not ready fails the run at once with
// its reason.
func (s *Service) StartRoutine(ctx context.Context, r routine.Run) (task.Task, error) {
	named := r.Provider
	if r.Kind == store.RoutineCommand {
		named = task.ShellProvider
	}
	e, err := engine.Pick(s.cfg.Engines.All(ctx), named, "", true)
	if err != nil {
		return task.Task{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	model := r.Model
	if model == "" {
		model = e.Info.Models.Default
	}
	// The routine stands where a parent chat would: its folder and mode.
	home := conversation.Conversation{Provider: e.ID, Model: model, Mode: r.Mode, Cwd: r.Cwd}
	sp := spec{kind: task.Background, title: r.Name, text: r.Text, engine: e, model: model, mode: r.Mode,
		wake: task.WakeNone, parentEngine: e.ID, routine: r.RoutineID}
	return s.start(ctx, home, sp)
}
