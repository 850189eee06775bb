//go:build windows

package notify

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/windows/registry"
)

// ToastAppID is Conch's AppUserModelID: the name Windows files its toasts
// under, in the notification centre and in Settings › System › Notifications.
const ToastAppID = "dev.conch.desktop"

// toastActivatorCLSID names Conch's toast activator (see winrt_windows.go)
// to Windows; it is Conch's own and never changes.
const toastActivatorCLSID = "{0FD3540B-F2B3-4E59-971A-6440A7750AB9}"

// Toasts shows Windows toast notifications through the WinRT API: one per
// task tag, replaced in place, with Allow and Deny buttons on questions. A
// click on a toast or a button, in the popup or later in the notification
// centre, comes back to the ActionFunc. Conch registers itself for this in
// the current user's registry (an unpackaged app needs no shortcut then):
// its AppUserModelID with the activator, and the program Windows starts
// when no Conch is running. A process has one activator, so one Toasts
// that listens at a time.
//
// Every WinRT call runs on one OS thread of Toasts' own, which stays in the
// multithreaded apartment: the window's thread is in a single-threaded one
// (WebView2), and a goroutine may move between threads.
type Toasts struct {
	jobs   chan toastJob
	done   chan struct{}
	exited chan struct{}
	once   sync.Once
	listen bool
	clicks clicks
}

type toastJob struct {
	toast Toast
	err   chan<- error
}

// OpenToasts starts showing toasts. With listen false (the doctor) it only
// checks that toasts can be shown: Conch is not registered and no click
// comes back to this process. Clicks are kept until Handle: Windows starts
// Conch for a click on a toast and hands the click over while it starts. The error is Windows' reason when toasts
// cannot be shown at all; a Toasts with toasts turned off for Conch comes
// with an error that says so.
func OpenToasts(listen bool) (*Toasts, error) {
	t := &Toasts{jobs: make(chan toastJob), done: make(chan struct{}), exited: make(chan struct{}), listen: listen}
	if t.listen {
		if err := registerToasts(); err != nil {
			return nil, err
		}
		activation.Store(&t.clicks)
	}
	ready := make(chan started, 1)
	go t.run(ready)
	s := <-ready
	if s.err != nil {
		if t.listen {
			activation.Store(nil)
		}
		return nil, s.err
	}
	return t, s.off
}

// started is how the WinRT thread came up: err when it could not, off when
// it did but Windows keeps the toasts from showing.
type started struct{ err, off error }

func openToasts(listen bool) (Notifier, error) {
	t, err := OpenToasts(listen)
	if t == nil {
		return Plain{}, fmt.Errorf("toasts with buttons are not available on this Windows, so notifications are plain: %w", err)
	}
	return t, err
}

// run is the thread of every WinRT call: it never unlocks, so the thread
// ends with the goroutine and takes its apartment with it.
func (t *Toasts) run(ready chan<- started) {
	defer close(t.exited)
	runtime.LockOSThread()
	w, err := startWinRT(ToastAppID, t.listen)
	if err != nil {
		ready <- started{err: err}
		return
	}
	defer w.close()
	ready <- started{off: offProblem(w)}
	for {
		select {
		case <-t.done:
			return
		case j := <-t.jobs:
			j.err <- w.show(j.toast)
		}
	}
}

// offProblem says, in words for the person, if Windows keeps Conch's toasts
// from showing. A setting that cannot be read is no problem: Windows reads
// it only for an app it knows, and the doctor's check does not register one.
func offProblem(w *winrt) error {
	s, err := w.setting()
	if err != nil {
		return nil
	}
	switch s {
	case 0:
		return nil
	case 1:
		return errors.New("notifications from Conch are turned off in Windows: turn them on in Settings › System › Notifications")
	case 2:
		return errors.New("notifications are turned off in Windows: turn them on in Settings › System › Notifications")
	case 3:
		return errors.New("notifications are turned off by your organisation's group policy")
	}
	return fmt.Errorf("notifications from Conch are not shown by this Windows (setting %d)", s)
}

// Send shows m as a toast, replacing the one shown for m.Tag.
func (t *Toasts) Send(m Message) error {
	errc := make(chan error, 1)
	select {
	case t.jobs <- toastJob{toast: NewToast(m), err: errc}:
	case <-t.exited:
		return fmt.Errorf("notify %s: %w", m.Tag, ErrClosed)
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("notify %s: %w", m.Tag, err)
	}
	return nil
}

// Describe names the service.
func (t *Toasts) Describe() string { return "Windows toast notifications" }

// Actions is true: clicks and buttons come back through the activator.
func (t *Toasts) Actions() bool { return true }

// Handle sets what clicks and buttons call, handing it those kept so far.
func (t *Toasts) Handle(f ActionFunc) { t.clicks.handle(f) }

// Withdraw does nothing: a toast is left in the notification centre, and
// its buttons on a question settled meanwhile are refused.
func (t *Toasts) Withdraw(string) error { return nil }

// Close stops showing toasts and listening for clicks; safe twice. Toasts
// already shown stay in the notification centre, and a click on one starts
// Conch (see LaunchedByToast).
func (t *Toasts) Close() error {
	t.once.Do(func() {
		close(t.done)
		<-t.exited
		if t.listen {
			activation.Store(nil)
		}
	})
	return nil
}

// registerToasts tells Windows, for the current user, Conch's name and
// activator for ToastAppID, and the program to start with -Embedding when
// a toast is clicked and no Conch is running: this one, wherever it lives now.
func registerToasts() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("register Conch for notifications: %w", err)
	}
	values := []struct{ key, name, value string }{
		{`Software\Classes\AppUserModelId\` + ToastAppID, "DisplayName", "Conch"},
		{`Software\Classes\AppUserModelId\` + ToastAppID, "CustomActivator", toastActivatorCLSID},
		{`Software\Classes\CLSID\` + toastActivatorCLSID, "", "Conch notifications"},
		{`Software\Classes\CLSID\` + toastActivatorCLSID + `\LocalServer32`, "", `"` + exe + `"`},
	}
	for _, v := range values {
		if err := setRegistryString(v.key, v.name, v.value); err != nil {
			return fmt.Errorf("register Conch for notifications: %w", err)
		}
	}
	return nil
}

func setRegistryString(path, name, value string) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, path, registry.QUERY_VALUE|registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf(`open HKCU\%s: %w`, path, err)
	}
	defer k.Close()
	if old, _, err := k.GetStringValue(name); err == nil && old == value {
		return nil
	}
	if err := k.SetStringValue(name, value); err != nil {
		return fmt.Errorf(`set HKCU\%s %q: %w`, path, name, err)
	}
	return nil
}
