// Package pref holds the person's preferences and their defaults.
package pref

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
)

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

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead is the price of cached input; 0 uses Input.
	CacheRead float64 `json:"cacheRead,omitempty"`
}

// Budget caps spending across every chat, task and helper.
type Budget struct {
	// Monthly is the most Conch may spend in a calendar month, in USD; 0
	// sets no cap.
	Monthly float64 `json:"monthly"`
	// JobCap is the most one delegate's helpers may spend together, in
	// USD, when the call names no cap of its own; 0 sets none. A job at
	// its cap pauses rather than fails.
	JobCap float64 `json:"jobCap"`
}

// Preferences are the person's settings that the engine reads.
type Preferences struct {
	Limits        Limits `json:"limits"`
	Notifications Topics `json:"notifications"`
	Budget        Budget `json:"budget"`
	// Prices maps a model id, or the start of one ("claude-sonnet-4"), to
	// its price; models not in it (local ones) cost nothing.
	Prices map[string]Price `json:"prices"`
	// LimitFallback is the provider a task carries on with when its own
	// reaches a usage limit ("" : none, the task fails saying why).
	LimitFallback string `json:"limitFallback"`
	// RetentionDays is how long a finished task (done, failed, stopped,
	// interrupted) is kept after it ended; older ones are pruned with
	// their output logs, and their chats stay. 0 keeps them forever.
	RetentionDays int `json:"retentionDays"`
	// OpenAtLogin starts Conch when the person logs in (an XDG autostart
	// entry on Linux, the Run key on Windows). What is read back is the
	// system's own state: an entry removed by hand reads as off.
	OpenAtLogin bool `json:"openAtLogin,omitempty"`
	// SSHConfig is the ssh config file Conch passes to ssh with -F when
	// it reaches a host ("": none, so OpenSSH reads the person's own
	// ~/.ssh/config, as in a terminal).
	SSHConfig string `json:"sshConfig,omitempty"`
}

// DefaultRetentionDays is how long finished tasks are kept unless the
// person says otherwise.
const DefaultRetentionDays = 90

// MaxRetentionDays bounds RetentionDays (100 years: "forever" is 0).
const MaxRetentionDays = 36500

// Defaults returns the preferences a new home starts with.
func Defaults() Preferences {
	return Preferences{
		Limits:        Limits{Background: 3, Helper: 4},
		Notifications: Topics{Tasks: true, Approvals: true},
		Prices:        DefaultPrices(),
		RetentionDays: DefaultRetentionDays,
	}
}

// DefaultPrices are list prices of common hosted models (USD per million
// tokens) as of late 2025.
func DefaultPrices() map[string]Price {
	return map[string]Price{
		"gpt-4o":            {Input: 2.5, Output: 10},
		"gpt-4o-mini":       {Input: 0.15, Output: 0.6},
		"gpt-4.1":           {Input: 2, Output: 8},
		"gpt-4.1-mini":      {Input: 0.4, Output: 1.6},
		"gpt-5":             {Input: 1.25, Output: 10},
		"gpt-5-mini":        {Input: 0.25, Output: 2},
		"o3":                {Input: 2, Output: 8},
		"claude-opus-4":     {Input: 15, Output: 75},
		"claude-sonnet-4":   {Input: 3, Output: 15},
		"claude-3-7-sonnet": {Input: 3, Output: 15},
		"claude-3-5-haiku":  {Input: 0.8, Output: 4},
		"claude-haiku-4":    {Input: 1, Output: 5},
	}
}

// Validate refuses values the engine cannot run with, saying why in a
// sentence the person can act on.
func (p Preferences) Validate() error {
	if p.Limits.Background < 1 || p.Limits.Background > 64 {
		return fmt.Errorf("background tasks at once must be between 1 and 64, not %d", p.Limits.Background)
	}
	if p.Limits.Helper < 1 || p.Limits.Helper > 64 {
		return fmt.Errorf("helpers at once must be between 1 and 64, not %d", p.Limits.Helper)
	}
	if p.Budget.JobCap < 0 || p.Budget.JobCap > 1e5 || math.IsNaN(p.Budget.JobCap) {
		return fmt.Errorf("the cap of a delegated job must be between $0 (no cap) and $100,000, not %v", p.Budget.JobCap)
	}
	if p.Budget.Monthly < 0 || p.Budget.Monthly > 1e6 || math.IsNaN(p.Budget.Monthly) {
		return fmt.Errorf("the monthly budget must be between $0 (no cap) and $1,000,000, not %v", p.Budget.Monthly)
	}
	if len(p.LimitFallback) > 100 {
		return fmt.Errorf("the fallback must be a connected provider's id (%d bytes is too long for one)", len(p.LimitFallback))
	}
	if p.LimitFallback == "shell" {
		// The shell runs its words as a command: it would run a task's
		// instructions as bash.
		return fmt.Errorf("the shell cannot carry a task on; pick a model or a coding agent as the fallback")
	}
	if p.RetentionDays < 0 || p.RetentionDays > MaxRetentionDays {
		return fmt.Errorf("finished tasks are kept between 0 (forever) and %d days, not %d", MaxRetentionDays, p.RetentionDays)
	}
	if p.SSHConfig != "" && (!filepath.IsAbs(p.SSHConfig) || len(p.SSHConfig) > 1000 || strings.ContainsAny(p.SSHConfig, "\r\n")) {
		return fmt.Errorf("the ssh config file must be an absolute path (or empty for your own ~/.ssh/config), not %q", p.SSHConfig)
	}
	for model, pr := range p.Prices {
		if model == "" {
			return fmt.Errorf("a price is set for a model with no name; give each price a model id")
		}
		for _, v := range []float64{pr.Input, pr.Output, pr.CacheRead} {
			if v < 0 || v > 1e4 || math.IsNaN(v) {
				return fmt.Errorf("the prices of %s must be between $0 and $10,000 per million tokens", model)
			}
		}
	}
	return nil
}
