package notify

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"github.com/gen2brain/beeep"
)

// Plain raises a notification through beeep: macOS Notification Center, or
// on Windows a toast when the WinRT API could not be used directly; on
// Linux, where D-Bus had no server, it tries notify-send. It has no tags,
// buttons or clicks, so clicking it only dismisses it; answers are given in
// the app.
type Plain struct{}

// Send shows m as a plain notification.
func (Plain) Send(m Message) error {
	var err error
	if runtime.GOOS == "linux" {
		// Not beeep here: it closes the process's shared session-bus
		// connection after use, which the tray icon lives on.
		err = exec.Command("notify-send", "--app-name=Conch", m.Title, m.Body).Run()
	} else {
		err = beeep.Notify(m.Title, m.Body, "")
	}
	if err != nil {
		return fmt.Errorf("notify %s: %w", m.Tag, err)
	}
	return nil
}

// Describe names the fallback.
func (Plain) Describe() string { return "plain notifications (" + runtime.GOOS + "), without buttons" }

// Actions is false: clicks do not come back.
func (Plain) Actions() bool { return false }

// Handle does nothing: no click comes back.
func (Plain) Handle(ActionFunc) {}

// Withdraw does nothing: a plain notification cannot be named again.
func (Plain) Withdraw(string) error { return nil }

// Close does nothing.
func (Plain) Close() error { return nil }

// Open returns the best notifier here: D-Bus with actions on Linux when a
// server answers, toasts with actions on Windows when the WinRT API does,
// else plain notifications (always on macOS). With listen false (the
// doctor, which only looks) Conch does not register for the clicks on
// Windows. Clicks are kept until the notifier's Handle. The error says, in
// words for the person, why the better one was not used or what keeps it
// from showing anything (nil when all is well, and on macOS).
func Open(listen bool) (Notifier, error) {
	switch runtime.GOOS {
	case "windows":
		return openToasts(listen)
	case "linux":
		return openDBus()
	}
	return Plain{}, nil
}

func openDBus() (Notifier, error) {
	d, err := ConnectSession()
	if errors.Is(err, ErrNoServer) {
		return Plain{}, ErrNoServer // the bus's own wording helps nobody
	}
	if err != nil {
		return Plain{}, err
	}
	return d, nil
}
