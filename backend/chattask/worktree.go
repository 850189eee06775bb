package chattask

import (
	"conch/backend/internal/quantity"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/worktree"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

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
