package handoff

import (
	"context"
	"time"

	"conch/backend/task"
	"conch/backend/worktree"
)

// overlapTimeout bounds listing the helpers' changed files once their
// group has settled (the parent's turn may be ending).
const overlapTimeout = 30 * time.Second

// markOverlaps records on each helper of a settled group the files it
// changed that another helper of the group changed too, in their kept
// worktrees, so both cards say so before the person merges. The change is
// stored and announced like any other (the runner's Amend); it returns the
// records with it.
func (s *Service) markOverlaps(ctx context.Context, ends []task.Task) []task.Task {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), overlapTimeout)
	defer cancel()
	// Worktrees on hosts are there, not here: only this computer's are
	// compared.
	here := make([]task.Task, 0, len(ends))
	for _, t := range ends {
		if t.Host == "" {
			here = append(here, t)
		}
	}
	over := worktree.Overlaps(ctx, here)
	for i, t := range ends {
		o, ok := over[t.ID]
		if !ok || t.Worktree == nil {
			continue
		}
		w := *t.Worktree
		w.Overlap = o
		ends[i].Worktree = &w
		if got, err := s.cfg.Tasks.Amend(t.ID, func(t *task.Task) {
			if t.Worktree != nil {
				t.Worktree.Overlap = o
			}
		}); err == nil {
			ends[i] = got
		}
	}
	return ends
}

// overlapNote ends a group's merged result, set apart from the last part,
// by saying which helpers changed the same files ("Both 'Fix the bug' and
// 'Write the tests' changed src/app.ts."), or is "" when none did.
func overlapNote(ends []task.Task) string {
	if say := worktree.SayOverlaps(ends); say != "" {
		return "\n\n---\n\n" + say
	}
	return ""
}
