package worktree_test

import (
	"context"
	"errors"
	"log"
	"os"
	"time"

	"conch/backend/worktree"
)

// A helper's whole life in a worktree: made from the chat's folder, set up,
// worked in, and settled when it ends.
func Example() {
	ctx := context.Background()
	tree, err := worktree.Add(ctx, "/home/me/project", "/home/me/.conch/worktrees", "t42")
	if errors.Is(err, worktree.ErrNotRepo) {
		// Not a repository: the helper shares the folder, and its card says so.
		return
	}
	if err != nil {
		log.Fatal(err)
	}

	setupCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := tree.Setup(setupCtx, os.Stdout); err != nil {
		// The helper fails with the script's output; nothing is lost by
		// removing the fresh worktree.
		_ = tree.Remove(ctx, true)
		log.Fatal(err)
	}

	// ... the helper works in tree.Dir ...

	rec, err := tree.Settle(ctx)
	if err != nil {
		log.Print(err) // rec is still the record to store
	}
	if rec.Kept {
		log.Printf("kept branch %s: %+v", rec.Branch, rec.Work)
	}

	// Later, after a restart, when the person confirms throwing the work away:
	again := worktree.FromRecord(rec)
	if err := again.Remove(ctx, true); err != nil && !errors.Is(err, worktree.ErrMissing) {
		log.Print(err)
	}
}
