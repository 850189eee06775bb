package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/worktree"
)

// RemoveWorktree removes a finished helper's kept worktree and its branch.
// One that holds work (edits, commits, an unfinished merge) is removed only
// with confirm, the person's explicit say; without it the answer is a
// conflict saying what would be lost. A worktree deleted by hand is cleaned
// up and reported.
func (s *Service) RemoveWorktree(id string, confirm bool) (task.Task, error) {
	r, err := s.tasks()
	if err != nil {
		return task.Task{}, err
	}
	t, err := r.Get(id)
	if err != nil {
		return task.Task{}, err
	}
	if t.Worktree == nil || !t.Worktree.Kept {
		return t, fmt.Errorf("it keeps no worktree: %w", taskrun.ErrConflict)
	}
	if !t.Status.Finished() {
		return t, fmt.Errorf("it is %s; stop it before removing its worktree: %w", t.Status.Words(), taskrun.ErrConflict)
	}
	err = worktree.FromRecord(*t.Worktree).Remove(context.Background(), confirm)
	switch {
	case errors.Is(err, worktree.ErrHasWork):
		return t, fmt.Errorf("its worktree holds work (%s); confirm to remove it and its branch %s: %w", describeWork(t.Worktree.Work), t.Worktree.Branch, taskrun.ErrConflict)
	case errors.Is(err, worktree.ErrLocked):
		return t, fmt.Errorf("%v: %w", err, taskrun.ErrConflict)
	case err != nil && !errors.Is(err, worktree.ErrMissing):
		return t, err
	}
	return r.Amend(id, func(t *task.Task) {
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
