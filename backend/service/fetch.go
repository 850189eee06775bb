package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"conch/backend/internal/quantity"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/worktree"
)

// fetchTimeout bounds one Fetch to this computer.
const fetchTimeout = 5 * time.Minute

// Fetched is what Fetch to this computer brought home
// (POST /api/tasks/:id/fetch): the helper's branch, now in the clone
// here, and how many commits it has beyond where it started.
type Fetched struct {
	Task    task.Task `json:"task"`
	Repo    string    `json:"repo"`
	Branch  string    `json:"branch"`
	Commits int       `json:"commits"`
}

// FetchTask brings a helper's branch from the repository on its host into
// this computer's clone of it, the folder of the chat it came from: git
// fetch over SSH into a branch of the same name, never a merge. A folder
// that is no clone of that repository (it lacks the commit the branch
// started from) fetches nothing and says so.
func (s *Service) FetchTask(id string) (Fetched, error) {
	r, err := s.tasks()
	if err != nil {
		return Fetched{}, err
	}
	hosts, err := s.hosts()
	if err != nil {
		return Fetched{}, err
	}
	chats, err := s.chats()
	if err != nil {
		return Fetched{}, err
	}
	t, err := r.Get(id)
	if err != nil {
		return Fetched{}, err
	}
	if t.Host == "" || t.Worktree == nil || t.Worktree.Branch == "" {
		return Fetched{Task: t}, fmt.Errorf("it has no branch on another computer to fetch: %w", taskrun.ErrConflict)
	}
	if t.ParentConversationID == "" {
		return Fetched{Task: t}, fmt.Errorf("it came from no chat here, so no clone here is its repository's: %w", taskrun.ErrConflict)
	}
	parent, err := chats.Snapshot(t.ParentConversationID)
	if err != nil {
		return Fetched{Task: t}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	env, url, err := hosts.Git(ctx, t.Host, t.Worktree.Path)
	if err != nil {
		return Fetched{Task: t}, err
	}
	f, err := worktree.Fetch(ctx, parent.Cwd, url, t.Worktree.Branch, t.Worktree.Base, env)
	if errors.Is(err, worktree.ErrNoClone) {
		return Fetched{Task: t}, fmt.Errorf("%v: %w", err, taskrun.ErrConflict)
	}
	if err != nil {
		return Fetched{Task: t}, err
	}
	step := fmt.Sprintf("Fetched its branch %s into %s (%s); nothing was merged", f.Branch, f.Repo, quantity.Plural(f.Commits, "commit", "commits"))
	got, err := r.Amend(id, func(t *task.Task) { t.AddStep(step) })
	if err != nil {
		got = t
	}
	return Fetched{Task: got, Repo: f.Repo, Branch: f.Branch, Commits: f.Commits}, nil
}
