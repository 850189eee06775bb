// Package notify raises native notifications for tasks: one per tag
// ("task-<id>"), replaced in place when the task moves on, with actions to
// open its chat or answer its question where the platform has them.
package notify

import (
	"errors"
)

// Action keys a notification can carry; "default" is a click on its body.
const (
	ActionOpen  = "default"
	ActionAllow = "allow"
	ActionDeny  = "deny"
)

// Message is one notification.
type Message struct {
	// Tag names what the notification is about; a later message with the
	// same tag replaces the earlier one.
	Tag   string
	Title string
	Body  string
	// Actions are extra buttons (ActionAllow, ActionDeny) besides the click.
	Actions []string
}

// ActionFunc is called when the person clicks a notification (ActionOpen)
// or one of its buttons.
type ActionFunc func(tag, action string)

// Notifier sends messages to the platform.
type Notifier interface {
	// Send shows m, replacing the notification shown for m.Tag if any.
	Send(m Message) error
	// Handle sets what clicks and buttons call (nil: nothing yet). A
	// notifier is opened before the service that handles its clicks
	// exists, so the clicks that come before Handle (one pressed while
	// Conch starts, or the one that started it) are kept, up to a few,
	// and handed to f when it is set, in order.
	Handle(f ActionFunc)
	// Withdraw takes down the notification shown for tag, if the platform
	// can: a question answered elsewhere has no use for its buttons.
	Withdraw(tag string) error
	// Describe says which notification service is used, for the doctor.
	Describe() string
	// Actions reports whether clicks and buttons come back to Conch.
	Actions() bool
	// Close stops listening for actions; safe twice.
	Close() error
}

// ErrNoServer is returned when no notification server answers on D-Bus.
var ErrNoServer = errors.New("no notification server answers on D-Bus")

// ErrClosed is returned by a notifier's Send after its Close.
var ErrClosed = errors.New("the notifier is closed")

func label(action string) string {
	switch action {
	case ActionAllow:
		return "Allow"
	case ActionDeny:
		return "Deny"
	}
	return "Open"
}
