package shell

import (
	"context"
	"os/exec"

	"conch/backend/taskrun"
)

// held is a command started before its task's start was stored, waiting
// at its gate; nil for one started after. Its methods do nothing on nil.
type held struct {
	g     *gate
	child func() // closes the parent's copy of the gate's read end
}

// gate holds cmd at a gate when run began before its start was stored
// (run.Stored).
func (s *Shell) gate(cmd *exec.Cmd, run *taskrun.Run) (*held, error) {
	if run.Stored == nil {
		return nil, nil
	}
	g, child, err := holdAtGate(cmd)
	if err != nil {
		return nil, err
	}
	return &held{g: g, child: child}, nil
}

// started lets go of the parent's copy of what the command was given.
func (h *held) started() {
	if h != nil {
		h.child()
	}
}

// let lets the held command run once its task's start is stored. An
// error (the start was never stored, or the run was stopped meanwhile)
// shuts the gate: the command ends there, having run nothing.
func (h *held) let(ctx context.Context, run *taskrun.Run) error {
	if h == nil {
		return nil
	}
	err := run.Stored()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		h.g.shut()
		return err
	}
	h.g.open()
	return nil
}

// shut ends a held command at its gate.
func (h *held) shut() {
	if h != nil {
		h.g.shut()
	}
}
