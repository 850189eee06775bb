package routine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Forms are the plain-words schedules Parse understands, for the error a
// person reads when theirs is not one of them.
const Forms = `"every weekday at 9:00", "every day at 18:30", "every monday at 9", "every weekend at 10", ` +
	`"daily at 7", "hourly", "every 2 hours", "every 15 minutes", "every minute", or a 5-field cron expression such as "0 9 * * 1-5"`

// Schedule is a parsed routine schedule: its cron form and when it next
// comes due.
type Schedule struct {
	// Cron is the expression as stored ("0 9 * * 1-5").
	Cron string
	spec *cron.SpecSchedule
}

// cronParser reads the standard 5 fields; secondsParser a leading seconds
// field too (tests only: see Config.Seconds).
var (
	cronParser    = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	secondsParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
)

// Parse reads a schedule in plain words or as a cron expression (with a
// leading seconds field when seconds is set) and returns it, or an error
// matching ErrInvalid that lists the forms understood.
func Parse(text string, seconds bool) (Schedule, error) {
	in := strings.Join(strings.Fields(strings.ToLower(text)), " ")
	if in == "" {
		return Schedule{}, fmt.Errorf("%w: the schedule is empty; write it as %s", ErrInvalid, Forms)
	}
	expr, ok, err := fromWords(in)
	if err != nil {
		return Schedule{}, err
	}
	if !ok {
		expr = in
	}
	p := cronParser
	if seconds && len(strings.Fields(expr)) == 6 {
		p = secondsParser
	}
	if strings.ContainsAny(expr, "@=") {
		return Schedule{}, fmt.Errorf("%w: %q is not a schedule Conch understands; write it as %s", ErrInvalid, text, Forms)
	}
	s, err := p.Parse(expr)
	if err != nil {
		return Schedule{}, fmt.Errorf("%w: %q is not a schedule Conch understands (%v); write it as %s", ErrInvalid, text, err, Forms)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return Schedule{}, fmt.Errorf("%w: %q is not a schedule Conch understands; write it as %s", ErrInvalid, text, Forms)
	}
	if spec.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return Schedule{}, fmt.Errorf("%w: %q never comes due (no such day)", ErrInvalid, text)
	}
	return Schedule{Cron: expr, spec: spec}, nil
}

var (
	atTime   = `(\d{1,2})(?::(\d{2}))?\s?(am|pm)?`
	reDaily  = regexp.MustCompile(`^(?:every day|daily|each day)(?: at ` + atTime + `)?$`)
	reDays   = regexp.MustCompile(`^(?:every|each|on) ([a-z, ]+?) at ` + atTime + `$`)
	reAnd    = regexp.MustCompile(`\s*(?:,|\band\b)\s*`)
	reEveryN = regexp.MustCompile(`^every (\d+|one|two|three|four|five|six|ten|twelve|fifteen|twenty|thirty)? ?(minute|minutes|min|mins|hour|hours)$`)
)

var numbers = map[string]int{"": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10, "twelve": 12,
	"fifteen": 15, "twenty": 20, "thirty": 30}

var weekdays = map[string]string{"sunday": "0", "monday": "1", "tuesday": "2", "wednesday": "3", "thursday": "4", "friday": "5", "saturday": "6",
	"sun": "0", "mon": "1", "tue": "2", "tues": "2", "wed": "3", "thu": "4", "thur": "4", "thurs": "4", "fri": "5", "sat": "6",
	"weekday": "1-5", "weekdays": "1-5", "weekend": "0,6", "weekends": "0,6", "weekend day": "0,6", "weekend days": "0,6"}

// fromWords turns plain words into cron; ok is false when in is not words
// (it may be cron), and err says why words that look like a schedule are
// not one.
func fromWords(in string) (expr string, ok bool, err error) {
	switch in {
	case "hourly", "every hour":
		return "0 * * * *", true, nil
	case "every minute":
		return "* * * * *", true, nil
	case "daily", "every day":
		in = "every day at 0:00"
	}
	if m := reDaily.FindStringSubmatch(in); m != nil {
		h, mi, err := clock(m[1], m[2], m[3])
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("%d %d * * *", mi, h), true, nil
	}
	if m := reDays.FindStringSubmatch(in); m != nil {
		dow, err := days(m[1])
		if err != nil {
			return "", false, err
		}
		h, mi, err := clock(m[2], m[3], m[4])
		if err != nil {
			return "", false, err
		}
		return fmt.Sprintf("%d %d * * %s", mi, h, dow), true, nil
	}
	if m := reEveryN.FindStringSubmatch(in); m != nil {
		n, known := numbers[m[1]]
		if !known {
			n, _ = strconv.Atoi(m[1])
		}
		if strings.HasPrefix(m[2], "h") {
			return everyHours(n)
		}
		return everyMinutes(n)
	}
	return "", false, nil
}

// days reads "weekday", "monday", "tuesday and thursday" as a cron
// weekday field.
func days(in string) (string, error) {
	if dow, ok := weekdays[in]; ok {
		return dow, nil
	}
	var out []string
	for _, d := range reAnd.Split(in, -1) {
		if d == "" {
			continue
		}
		dow, ok := weekdays[d]
		if !ok {
			dow, ok = weekdays[strings.TrimSuffix(d, "s")]
		}
		if !ok || strings.ContainsAny(dow, "-,") {
			return "", fmt.Errorf("%w: %q is not a day Conch knows; write it as %s", ErrInvalid, d, Forms)
		}
		out = append(out, dow)
	}
	if len(out) == 0 {
		return "", fmt.Errorf("%w: no day is named; write it as %s", ErrInvalid, Forms)
	}
	return strings.Join(out, ","), nil
}

func everyHours(n int) (string, bool, error) {
	switch {
	case n == 1:
		return "0 * * * *", true, nil
	case n > 1 && n < 24 && 24%n == 0:
		return fmt.Sprintf("0 */%d * * *", n), true, nil
	}
	return "", false, fmt.Errorf("%w: every %d hours does not divide a day evenly; use 1, 2, 3, 4, 6, 8 or 12 hours, or a cron expression", ErrInvalid, n)
}

func everyMinutes(n int) (string, bool, error) {
	switch {
	case n == 1:
		return "* * * * *", true, nil
	case n > 1 && n < 60 && 60%n == 0:
		return fmt.Sprintf("*/%d * * * *", n), true, nil
	}
	return "", false, fmt.Errorf("%w: every %d minutes does not divide an hour evenly; use 1, 2, 3, 4, 5, 6, 10, 12, 15, 20 or 30 minutes, or a cron expression", ErrInvalid, n)
}

// clock reads "9", "18:30", "7 pm" as an hour and a minute.
func clock(hs, ms, half string) (int, int, error) {
	h, _ := strconv.Atoi(hs)
	m := 0
	if ms != "" {
		m, _ = strconv.Atoi(ms)
	}
	switch half {
	case "am":
		if h == 12 {
			h = 0
		} else if h > 12 || h == 0 {
			h = 99
		}
	case "pm":
		if h < 12 && h > 0 {
			h += 12
		} else if h != 12 {
			h = 99
		}
	}
	if h > 23 || m > 59 {
		return 0, 0, fmt.Errorf("%w: %s%s is not a time of day; write it as 9:00 or 18:30", ErrInvalid, hs, strings.TrimSpace(":"+ms+" "+half))
	}
	return h, m, nil
}

// dayNames are the weekdays as the card says them, by cron number.
var dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

var (
	reNumber = regexp.MustCompile(`^\d{1,2}$`)
	reStep   = regexp.MustCompile(`^\*/(\d{1,2})$`)
)

// Words says a cron expression in plain words for the card ("every
// weekday at 9:00"), or "" when it has no short plain form (the card then
// shows the cron alone).
func Words(expr string) string {
	f := strings.Fields(expr)
	if len(f) == 6 { // a seconds field (tests)
		if m := reStep.FindStringSubmatch(f[0]); m != nil && strings.Join(f[1:], " ") == "* * * * *" {
			return "every " + m[1] + " seconds"
		}
		return ""
	}
	if len(f) != 5 || f[3] != "*" {
		return ""
	}
	min, hour, dom, dow := f[0], f[1], f[2], f[4]
	if dom != "*" {
		return ""
	}
	if hour == "*" && dow == "*" {
		switch {
		case min == "*":
			return "every minute"
		case min == "0":
			return "every hour"
		case reNumber.MatchString(min):
			return fmt.Sprintf("every hour at :%02s", min)
		}
		if m := reStep.FindStringSubmatch(min); m != nil {
			return "every " + m[1] + " minutes"
		}
		return ""
	}
	if m := reStep.FindStringSubmatch(hour); m != nil && min == "0" && dow == "*" {
		return "every " + m[1] + " hours"
	}
	if !reNumber.MatchString(min) || !reNumber.MatchString(hour) {
		return ""
	}
	h, _ := strconv.Atoi(hour)
	mi, _ := strconv.Atoi(min)
	at := fmt.Sprintf("at %d:%02d", h, mi)
	if h > 23 || mi > 59 {
		return ""
	}
	switch dow {
	case "*":
		return "every day " + at
	case "1-5":
		return "every weekday " + at
	case "0,6", "6,0":
		return "every weekend day " + at
	}
	var days []string
	for _, d := range strings.Split(dow, ",") {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 6 {
			return ""
		}
		days = append(days, dayNames[n])
	}
	return "every " + strings.Join(days, " and ") + " " + at
}

// allHours is the hour field with every hour set.
const allHours = 1<<24 - 1

// starBit is set in a field that was written "*" (robfig/cron's mark).
const starBit = 1 << 63

// Next is the first time after after that s comes due in loc.
//
// A schedule at set hours ("every day at 9:00") follows the wall clock in
// loc: 9:00 is 9:00 local on both sides of a daylight-saving change. A time
// the clock skips (2:30 on the spring-forward night) runs once, when the
// clock jumps (at 3:00); a time the clock passes twice (1:30 on the
// fall-back night) runs once, the first time. A schedule of every hour or
// more often follows real time instead (every 15 minutes stays 15 minutes
// apart across the change), as robfig/cron computes it.
func (s Schedule) Next(after time.Time, loc *time.Location) time.Time {
	spec := *s.spec
	spec.Location = loc
	if spec.Hour&allHours == allHours {
		return spec.Next(after.In(loc)).In(loc)
	}
	a := after.In(loc)
	y, mo, d := a.Date()
	for i := 0; i <= 366*5; i++ {
		day := time.Date(y, mo, d+i, 12, 0, 0, 0, loc)
		if 1<<uint(day.Month())&spec.Month == 0 || !dayMatches(&spec, day) {
			continue
		}
		if t, ok := firstOn(&spec, day, after, loc); ok {
			return t
		}
	}
	return time.Time{}
}

// firstOn is the first time on day's date, after after, that spec names.
func firstOn(spec *cron.SpecSchedule, day, after time.Time, loc *time.Location) (time.Time, bool) {
	for h := 0; h < 24; h++ {
		if 1<<uint(h)&spec.Hour == 0 {
			continue
		}
		for m := 0; m < 60; m++ {
			if 1<<uint(m)&spec.Minute == 0 {
				continue
			}
			for sec := 0; sec < 60; sec++ {
				if 1<<uint(sec)&spec.Second == 0 {
					continue
				}
				if t := wall(day.Year(), day.Month(), day.Day(), h, m, sec, loc); t.After(after) {
					return t, true
				}
			}
		}
	}
	return time.Time{}, false
}

// wall is a wall-clock time in loc; one the clock skips is the moment the
// clock jumps past it.
func wall(y int, mo time.Month, d, h, m, s int, loc *time.Location) time.Time {
	t := time.Date(y, mo, d, h, m, s, 0, loc)
	if t.Hour() == h && t.Minute() == m {
		return t
	}
	// Go reads a skipped time with the offset of one side of the jump:
	// the jump is where that side's zone ends or the other's begins.
	start, end := t.ZoneBounds()
	asked := time.Date(y, mo, d, h, m, s, 0, time.UTC)
	read := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
	if read.Before(asked) {
		return end
	}
	return start
}

// dayMatches is robfig/cron's rule: with either day field "*" both must
// match, else either may.
func dayMatches(s *cron.SpecSchedule, t time.Time) bool {
	domMatch := 1<<uint(t.Day())&s.Dom > 0
	dowMatch := 1<<uint(t.Weekday())&s.Dow > 0
	if s.Dom&starBit > 0 || s.Dow&starBit > 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}
