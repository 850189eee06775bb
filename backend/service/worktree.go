package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
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
	if t.Host != "" {
		return s.removeThere(r, t, confirm)
	}
	tree := worktree.FromRecord(*t.Worktree)
	repo, _ := tree.Repository(context.Background()) // for its salvage ref, while the worktree is there
	err = tree.Remove(context.Background(), confirm)
	switch {
	case errors.Is(err, worktree.ErrHasWork):
		return t, fmt.Errorf("its worktree holds work (%s)%s; confirm to remove it and its branch %s: %w", describeWork(t.Worktree.Work), lost(t.Worktree.Salvage), t.Worktree.Branch, taskrun.ErrConflict)
	case errors.Is(err, worktree.ErrLocked):
		return t, fmt.Errorf("%v: %w", err, taskrun.ErrConflict)
	case err != nil && !errors.Is(err, worktree.ErrMissing):
		return t, err
	}
	// What was salvaged goes with the worktree: the person said so.
	var dropErr error
	if s := t.Worktree.Salvage; s != nil && s.Ref != "" && repo != "" {
		dropErr = worktree.DropSalvage(context.Background(), repo, t.ID)
	}
	return r.Amend(id, func(t *task.Task) {
		t.Worktree.Kept = false
		t.Worktree.Salvage = nil
		t.AddStep("You removed its worktree and branch")
		if dropErr != nil {
			t.AddStep("Could not delete its salvage ref: " + dropErr.Error())
		}
	})
}

// lost quotes what a removal would throw away: the salvaged files and the
// branch's commits.
func lost(s *task.Salvage) string {
	if s == nil {
		return ""
	}
	var parts []string
	if len(s.Files) > 0 {
		parts = append(parts, "files "+strings.Join(s.Files, ", "))
	}
	if len(s.Commits) > 0 {
		parts = append(parts, "commits "+strings.Join(s.Commits, "; "))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; and ")
}

// OpenFolder shows a task's folder (a kept worktree, else where it ran) in
// the system's file manager, on the computer Conch runs on.
func (s *Service) OpenFolder(id string) error {
	r, err := s.tasks()
	if err != nil {
		return err
	}
	t, err := r.Get(id)
	if err != nil {
		return err
	}
	dir := t.Cwd
	if w := t.Worktree; w != nil && w.Kept && w.Path != "" {
		dir = w.Path
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("its folder %s is gone: %w", dir, taskrun.ErrConflict)
	}
	open := s.cfg.Open
	if open == nil {
		open = openFolder
	}
	if err := open(dir); err != nil {
		return fmt.Errorf("could not open %s: %v", dir, err)
	}
	return nil
}

// openFolder asks the desktop to show dir: xdg-open (Linux and the BSDs),
// open (macOS), explorer (Windows). It does not wait for the file manager.
func openFolder(dir string) error {
	name, args := "xdg-open", []string{dir}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name = "explorer"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s was not found, so no file manager can be asked", name)
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped whenever the opener ends
	return nil
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

// removeThere removes a host's helper's worktree on its host, and keeps
// here what it is there now.
func (s *Service) removeThere(r *taskrun.Runner, t task.Task, confirm bool) (task.Task, error) {
	if s.cfg.Links == nil {
		return t, errUnavailable("Hosts")
	}
	there, err := s.cfg.Links.RemoveWorktree(context.Background(), t.Host, t.ID, confirm)
	if err != nil {
		return t, err
	}
	return r.Amend(t.ID, func(t *task.Task) {
		if there.Worktree != nil {
			w := there.Clone().Worktree
			t.Worktree = w
		}
		t.AddStep("You removed its worktree and branch on " + t.Host)
	})
}
