package gateway

import (
	"errors"
	"fmt"
	"testing"

	"conch/backend/task"
	"conch/backend/taskrun"
)

// What a person reads is one sentence: capitalised, one closing mark, and
// none of the engine's plumbing words.
func TestErrorsReadAsSentences(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{errors.New("nothing answers at http://x: is Dead running?"), "Nothing answers at http://x: is Dead running?"},
		{errors.New("db is in use (is another Conch running?)"), "Db is in use (is another Conch running?)"},
		{fmt.Errorf("%w: text is empty", taskrun.ErrInvalid), "Text is empty."},
		{fmt.Errorf("it is working; stop it first: %w", taskrun.ErrConflict), "It is working; stop it first."},
		{&task.TransitionError{ID: "x", From: task.Running, To: task.Queued}, "It is working, so it cannot be tried again."},
		{errors.New("done."), "Done."},
		{errors.New("pick one (plan, ask)"), "Pick one (plan, ask)."},
	}
	for _, c := range cases {
		if got := sentence(c.err); got != c.want {
			t.Errorf("sentence(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
