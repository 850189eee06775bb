// Package pref holds the person's preferences and their defaults.
package pref

import "fmt"

// Limits are how many tasks of each kind may run at once.
type Limits struct {
	Background int `json:"background"`
	Helper     int `json:"helper"`
}

// Topics say which OS notifications the person wants.
type Topics struct {
	// Tasks: "When a background task finishes".
	Tasks bool `json:"tasks"`
	// Approvals: "When a task needs your OK".
	Approvals bool `json:"approvals"`
}

// Preferences are the person's settings that the engine reads.
type Preferences struct {
	Limits        Limits `json:"limits"`
	Notifications Topics `json:"notifications"`
}

// Defaults returns the preferences a new home starts with.
func Defaults() Preferences {
	return Preferences{
		Limits:        Limits{Background: 3, Helper: 4},
		Notifications: Topics{Tasks: true, Approvals: true},
	}
}

// Validate refuses values the engine cannot run with.
func (p Preferences) Validate() error {
	if p.Limits.Background < 1 || p.Limits.Background > 64 {
		return fmt.Errorf("limits.background must be between 1 and 64, got %d", p.Limits.Background)
	}
	if p.Limits.Helper < 1 || p.Limits.Helper > 64 {
		return fmt.Errorf("limits.helper must be between 1 and 64, got %d", p.Limits.Helper)
	}
	return nil
}
