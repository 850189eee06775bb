package agentcli

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// now is the clock limit times are read against (tests set it).
var now = time.Now

var (
	// "Try again at 3:15 PM." (Codex, local time), with an optional date
	// in front when the reset is not today: "Dec 1st, 2026 3:15 PM".
	tryAgainAt = regexp.MustCompile(`(?i)try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}),? )?(\d{1,2}):(\d{2}) ?([AP]M)`)
	// "resets 3pm (Europe/London)", "resets 3:30pm" (Claude Code).
	resetsAt = regexp.MustCompile(`(?i)resets (\d{1,2})(?::(\d{2}))? ?([ap]m)(?: \(([^)]+)\))?`)
	// "Claude AI usage limit reached|1764500000" (older Claude Code).
	limitEpoch = regexp.MustCompile(`usage limit reached\|(\d{9,11})`)
)

// clock12 converts a 12-hour clock to a 24-hour hour.
func clock12(hour int, ampm string) int {
	hour %= 12
	if strings.EqualFold(ampm, "pm") {
		hour += 12
	}
	return hour
}

// nextAt is the first time at hour:min in loc that is after now.
func nextAt(hour, minute int, loc *time.Location) time.Time {
	t := now().In(loc)
	at := time.Date(t.Year(), t.Month(), t.Day(), hour, minute, 0, 0, loc)
	if !at.After(t) {
		at = at.AddDate(0, 0, 1)
	}
	return at
}

// codexUntil reads the reset time from Codex's "try again at" text, in
// the local time zone; zero when it says none.
func codexUntil(msg string) time.Time {
	m := tryAgainAt.FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}
	}
	hour, _ := strconv.Atoi(m[4])
	minute, _ := strconv.Atoi(m[5])
	hour = clock12(hour, m[6])
	if m[1] != "" {
		day, _ := strconv.Atoi(m[2])
		year, _ := strconv.Atoi(m[3])
		month, err := time.Parse("Jan", m[1])
		if err != nil {
			return time.Time{}
		}
		return time.Date(year, month.Month(), day, hour, minute, 0, 0, time.Local)
	}
	return nextAt(hour, minute, time.Local)
}

// claudeEpoch reads the reset time from the older limit text, an epoch
// after "|"; zero when there is none.
func claudeEpoch(msg string) time.Time {
	if m := limitEpoch.FindStringSubmatch(msg); m != nil {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		return time.Unix(sec, 0)
	}
	return time.Time{}
}

// claudeResets reads "resets 3pm (Zone)" from the newer limit text, when
// the zone is known here; zero otherwise. It is only a guess at the day.
func claudeResets(msg string) time.Time {
	m := resetsAt.FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}
	}
	loc := time.Local
	if m[4] != "" {
		l, err := time.LoadLocation(m[4])
		if err != nil {
			return time.Time{}
		}
		loc = l
	}
	hour, _ := strconv.Atoi(m[1])
	minute, _ := strconv.Atoi(m[2])
	return nextAt(clock12(hour, m[3]), minute, loc)
}
