package worktree

import "errors"

var (
	// ErrNotRepo is returned by Add when dir is not inside a git working
	// tree; the helper then shares the folder instead.
	ErrNotRepo = errors.New("not inside a git repository")

	// ErrNoCommits is returned by Add when the repository has no commit yet,
	// so there is no HEAD to start a worktree from.
	ErrNoCommits = errors.New("the repository has no commits yet")

	// ErrExists is returned by Add when the worktree's folder or its branch
	// is already there; Add never reuses either.
	ErrExists = errors.New("already exists")

	// ErrHasWork is returned by Remove, without force, when the worktree or
	// its branch holds edits, untracked files, commits or an unfinished
	// operation: only the person may throw those away.
	ErrHasWork = errors.New("the worktree holds work")

	// ErrMissing is returned when the worktree's folder is gone (deleted by
	// hand) or is no longer a git worktree.
	ErrMissing = errors.New("the worktree is missing")

	// ErrLocked is returned when git has the worktree locked
	// (`git worktree lock`); Conch leaves it alone until it is unlocked.
	ErrLocked = errors.New("the worktree is locked")

	// ErrSetup is returned by Setup when .conch/worktree-setup fails or is
	// stopped; the error's text ends with the last lines it printed.
	ErrSetup = errors.New("worktree setup failed")
)
