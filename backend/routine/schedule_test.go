package routine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Plain words become cron, and cron is said back in plain words for the
// card; anything else is refused naming the forms understood.
func TestPlainWordsBothWays(t *testing.T) {
	cases := []struct{ in, cron, words string }{
		{"every weekday at 9:00", "0 9 * * 1-5", "every weekday at 9:00"},
		{"Every day at 18:30", "30 18 * * *", "every day at 18:30"},
		{"every monday at 9", "0 9 * * 1", "every Monday at 9:00"},
		{"every Fridays at 5pm", "0 17 * * 5", "every Friday at 17:00"},
		{"every weekend at 10", "0 10 * * 0,6", "every weekend day at 10:00"},
		{"every 2 hours", "0 */2 * * *", "every 2 hours"},
		{"every 15 minutes", "*/15 * * * *", "every 15 minutes"},
		{"hourly", "0 * * * *", "every hour"},
		{"daily at 7", "0 7 * * *", "every day at 7:00"},
		{"every minute", "* * * * *", "every minute"},
		{"0 9 * * 1-5", "0 9 * * 1-5", "every weekday at 9:00"},
		{"5 4 1 * *", "5 4 1 * *", ""},
		{"30 9 * * 2,4", "30 9 * * 2,4", "every Tuesday and Thursday at 9:30"},
	}
	for _, c := range cases {
		s, err := Parse(c.in, false)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if s.Cron != c.cron {
			t.Errorf("%q is %q, want %q", c.in, s.Cron, c.cron)
		}
		if w := Words(s.Cron); w != c.words {
			t.Errorf("%q says %q, want %q", s.Cron, w, c.words)
		}
		if c.words != "" {
			if back, err := Parse(c.words, false); err != nil || back.Cron != c.cron {
				t.Errorf("the card's words %q read back as %q, %v", c.words, back.Cron, err)
			}
		}
	}
	for _, bad := range []string{"", "sometimes", "every 7 hours", "every 7 minutes", "every day at 25:00", "every funday at 9",
		"@daily", "@every 1h", "CRON_TZ=UTC 0 9 * * *", "0 9 31 2 *", "* * * * * *", "1 2 3"} {
		_, err := Parse(bad, false)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%q was taken: %v", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), "every weekday at 9:00") && !strings.Contains(err.Error(), "evenly") &&
			!strings.Contains(err.Error(), "time of day") && !strings.Contains(err.Error(), "never comes due") {
			t.Errorf("%q: the error does not say what is understood: %v", bad, err)
		}
	}
	if s, err := Parse("*/5 * * * * *", true); err != nil || Words(s.Cron) != "every 5 seconds" {
		t.Errorf("a seconds field, where allowed: %+v %v", s, err)
	}
}

func mustParse(t *testing.T, s string) Schedule {
	t.Helper()
	sc, err := Parse(s, false)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func newYork(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A set time follows the wall clock across both daylight-saving changes;
// a time the clock skips runs once, when it jumps; one it passes twice
// runs once; every 15 minutes stays 15 real minutes apart.
func TestDaylightSavingBothWays(t *testing.T) {
	ny := newYork(t)
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, ny)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	utc := func(s string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	nine := mustParse(t, "every day at 9:00")
	// 2026-03-08 is the spring-forward day in New York, 2026-11-01 the fall-back.
	steps := []struct {
		name     string
		s        Schedule
		after    time.Time
		wantsUTC []string
	}{
		{"9:00 in spring", nine, at("2026-03-07 09:00"), []string{"2026-03-08 13:00", "2026-03-09 13:00"}},
		{"9:00 in autumn", nine, at("2026-10-31 09:00"), []string{"2026-11-01 14:00", "2026-11-02 14:00"}},
		{"2:30 on the spring-forward day", mustParse(t, "30 2 * * *"), at("2026-03-07 02:30"),
			[]string{"2026-03-08 07:00", "2026-03-09 06:30"}},
		{"1:30 on the fall-back day", mustParse(t, "30 1 * * *"), at("2026-10-31 01:30"),
			[]string{"2026-11-01 05:30", "2026-11-02 06:30"}},
		{"every 15 minutes in the repeated hour", mustParse(t, "every 15 minutes"), utc("2026-11-01 05:40"),
			[]string{"2026-11-01 05:45", "2026-11-01 06:00", "2026-11-01 06:15"}},
		{"every 15 minutes over the skipped hour", mustParse(t, "every 15 minutes"), utc("2026-03-08 06:40"),
			[]string{"2026-03-08 06:45", "2026-03-08 07:00", "2026-03-08 07:15"}},
	}
	for _, st := range steps {
		after := st.after
		for i, want := range st.wantsUTC {
			got := st.s.Next(after, ny)
			if !got.Equal(utc(want)) {
				t.Errorf("%s: run %d at %s (%s), want %s UTC", st.name, i+1, got.UTC().Format("2006-01-02 15:04"), got.Format("15:04 MST"), want)
			}
			if got.Location() != ny {
				t.Errorf("%s: not in the routine's zone: %v", st.name, got.Location())
			}
			after = got
		}
	}
}
