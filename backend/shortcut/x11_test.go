//go:build linux

package shortcut

import (
	"errors"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"conch/backend/testrig/xvfbtest"
)

// xvfb starts a virtual X display of the test's own and points DISPLAY at it.
func xvfb(t *testing.T) {
	t.Helper()
	t.Setenv("DISPLAY", xvfbtest.Display(t, "xdotool"))
}

func press(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("xdotool", "key", "ctrl+shift+Return").CombinedOutput(); err != nil {
		t.Fatalf("xdotool: %v %s", err, out)
	}
}

func waitCount(t *testing.T, n *atomic.Int32, want int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d presses seen, want %d", n.Load(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestGlobalShortcutOnARealXServer(t *testing.T) {
	xvfb(t)
	var n atomic.Int32
	s, err := Listen(func() { n.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	press(t)
	waitCount(t, &n, 1)

	// A second program cannot take the same combination.
	if _, err := Listen(func() {}); !errors.Is(err, ErrTaken) {
		t.Fatalf("second grab: %v", err)
	}

	// A key held down (repeats) counts once.
	press(t)
	press(t)
	time.Sleep(200 * time.Millisecond)
	if got := n.Load(); got != 1 {
		t.Fatalf("presses within the debounce counted %d times", got)
	}
	time.Sleep(Debounce)
	press(t)
	waitCount(t, &n, 2)

	// Other keys are not ours.
	if out, err := exec.Command("xdotool", "key", "ctrl+Return", "shift+Return", "Return").CombinedOutput(); err != nil {
		t.Fatalf("xdotool: %v %s", err, out)
	}
	time.Sleep(Debounce + 200*time.Millisecond)
	if got := n.Load(); got != 2 {
		t.Fatalf("other keys counted: %d", got)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	// Released: another program may take it now.
	s2, err := Listen(func() {})
	if err != nil {
		t.Fatalf("grab after close: %v", err)
	}
	_ = s2.Close()
}

func TestNoDisplayIsUnsupported(t *testing.T) {
	t.Setenv("DISPLAY", "")
	if _, err := Listen(func() {}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("want ErrUnsupported, got %v", err)
	}
}
