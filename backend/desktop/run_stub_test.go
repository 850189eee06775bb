//go:build !desktop

package desktop

import (
	"errors"
	"testing"
)

func TestRunWithoutTheDesktopTagIsUnavailable(t *testing.T) {
	t.Parallel()
	if err := Run(Options{Title: "Conch"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Run = %v, want ErrUnavailable", err)
	}
}
