// Package activity is the day-by-day account of everything that ran: each
// finished task and helper (its last run), and each reply of the person's
// chats, with its outcome, duration, provider, host and spend, and each
// day's total spend. It reads what the store keeps (the finished tasks in
// the order they ended, the chats' turns) and keeps nothing itself.
package activity

import (
	"fmt"
	"sort"
	"time"

	"conch/backend/conversation"
	"conch/backend/errcode"
	"conch/backend/store"
	"conch/backend/task"
)

// Source is what Activity reads (*store.Bolt).
type Source interface {
	FinishedTasksBefore(before time.Time, limit int) ([]task.Task, error)
	TurnsBefore(before time.Time, limit int) ([]store.Turn, error)
	Conversation(id string) (conversation.Conversation, error)
}

// Kinds of row.
const (
	KindTask    = "task"    // a background task or a command
	KindHelper  = "helper"  // a delegate's helper
	KindRoutine = "routine" // a routine's run
	KindTurn    = "turn"    // a reply in one of the person's chats
)

// Row is one thing that ran.
type Row struct {
	Kind string `json:"kind"`
	// ID is the task's id, or the chat's for a turn.
	ID    string `json:"id"`
	Title string `json:"title"`
	// Chat is the chat the row opens: the one a task came from (its own
	// for a task with none), a turn's own.
	Chat      string    `json:"chat,omitempty"`
	Outcome   string    `json:"outcome"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt"`
	// DurationMs is how long it ran.
	DurationMs int64   `json:"durationMs"`
	Provider   string  `json:"provider"`
	Model      string  `json:"model,omitempty"`
	Host       string  `json:"host,omitempty"`
	Spent      float64 `json:"spent"`
}

// Day is one day's rows, newest first, and what that whole day spent
// (under the same filters), in the person's time zone.
type Day struct {
	Date  string  `json:"date"` // 2006-01-02
	Spent float64 `json:"spent"`
	Rows  []Row   `json:"rows" ts:"notnull"`
}

// Page is a page of days; Next is the cursor of the next page ("" at the
// end). A day may go on in the next page: its Spent is the whole day's.
type Page struct {
	Days []Day  `json:"days" ts:"notnull"`
	Next string `json:"next"`
}

// Query narrows and pages Activity.
type Query struct {
	Outcome  string // done, failed, stopped, interrupted
	Provider string
	Host     string
	Chat     string
	Kind     string
	Cursor   string // a Page's Next
	Limit    int    // rows, 1–200 (0: 50)
	// Zone is the person's time zone (nil: the machine's).
	Zone *time.Location
}

// Bounds of a page.
const (
	LimitDefault = 50
	LimitMax     = 200
	// scanMax bounds how many rows one page looks at for its filters.
	scanMax = 5000
	chunk   = 200
)

// ErrInvalid is a query that can never be answered as written.
var ErrInvalid = errcode.New(errcode.Invalid, "invalid activity query")

// Log answers Activity from the store.
type Log struct{ src Source }

// New returns the log of src.
func New(src Source) *Log { return &Log{src: src} }

// Page is a page of Activity: up to q.Limit rows that q lets through,
// ending before q.Cursor, grouped by day.
func (l *Log) Page(q Query) (Page, error) {
	before, err := q.check()
	if err != nil {
		return Page{}, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = LimitDefault
	}
	rows, next, err := l.rows(q, before, time.Time{}, limit, scanMax)
	if err != nil {
		return Page{}, err
	}
	p := Page{Days: []Day{}, Next: next}
	for _, r := range rows {
		date := r.EndedAt.In(q.zone()).Format(time.DateOnly)
		if n := len(p.Days); n == 0 || p.Days[n-1].Date != date {
			spent, err := l.daySpent(q, date)
			if err != nil {
				return Page{}, err
			}
			p.Days = append(p.Days, Day{Date: date, Spent: spent, Rows: []Row{}})
		}
		d := &p.Days[len(p.Days)-1]
		d.Rows = append(d.Rows, r)
	}
	return p, nil
}

func (q Query) zone() *time.Location {
	if q.Zone == nil {
		return time.Local
	}
	return q.Zone
}

// check validates q at the edge and reads its cursor.
func (q Query) check() (time.Time, error) {
	switch q.Outcome {
	case "", "done", "failed", "stopped", "interrupted":
	default:
		return time.Time{}, fmt.Errorf("%w: outcome must be done, failed, stopped or interrupted", ErrInvalid)
	}
	switch q.Kind {
	case "", KindTask, KindHelper, KindRoutine, KindTurn:
	default:
		return time.Time{}, fmt.Errorf("%w: kind must be task, helper, routine or turn", ErrInvalid)
	}
	if q.Limit < 0 || q.Limit > LimitMax {
		return time.Time{}, fmt.Errorf("%w: limit must be between 1 and %d", ErrInvalid, LimitMax)
	}
	if q.Cursor == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, q.Cursor)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: cursor %q is not one this list gave (start again without it)", ErrInvalid, q.Cursor)
	}
	return t, nil
}

// rows are up to limit rows q lets through that ended before before and
// not before since (zero: no bound), newest first, looking at no more than
// scan rows; next is where the next look starts ("" when nothing is left).
func (l *Log) rows(q Query, before, since time.Time, limit, scan int) ([]Row, string, error) {
	var out []Row
	tasks := &stream{read: func(b time.Time) ([]Row, error) { return l.taskRows(b) }, before: before}
	turns := &stream{read: func(b time.Time) ([]Row, error) { return l.turnRows(b) }, before: before}
	for looked := 0; len(out) < limit; looked++ {
		r, ok, err := next(tasks, turns)
		if err != nil {
			return nil, "", err
		}
		if !ok || (!since.IsZero() && r.EndedAt.Before(since)) {
			return out, "", nil
		}
		if looked >= scan {
			return out, r.EndedAt.Add(time.Nanosecond).Format(time.RFC3339Nano), nil
		}
		if q.lets(r) {
			out = append(out, r)
		}
	}
	// There may be more: the next page starts after the last row given.
	last := out[len(out)-1]
	if _, ok, err := next(tasks, turns); err != nil || !ok {
		return out, "", err
	}
	return out, last.EndedAt.Format(time.RFC3339Nano), nil
}

// lets says whether q's filters let r through.
func (q Query) lets(r Row) bool {
	return (q.Outcome == "" || r.Outcome == q.Outcome) && (q.Provider == "" || r.Provider == q.Provider) &&
		(q.Host == "" || r.Host == q.Host) && (q.Chat == "" || r.Chat == q.Chat) && (q.Kind == "" || r.Kind == q.Kind)
}

// daySpent is what the whole day date spent, under q's filters.
func (l *Log) daySpent(q Query, date string) (float64, error) {
	start, err := time.ParseInLocation(time.DateOnly, date, q.zone())
	if err != nil {
		return 0, err
	}
	end := start.AddDate(0, 0, 1)
	rows, _, err := l.rows(q, end, start, scanMax, scanMax)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, r := range rows {
		total += r.Spent
	}
	return total, nil
}

// stream is one source's rows, read a chunk at a time, newest first.
type stream struct {
	read   func(before time.Time) ([]Row, error)
	before time.Time
	buf    []Row
	done   bool
}

func (s *stream) peek() (Row, bool, error) {
	if len(s.buf) == 0 && !s.done {
		rows, err := s.read(s.before)
		if err != nil {
			return Row{}, false, err
		}
		if len(rows) < chunk {
			s.done = true
		}
		if len(rows) > 0 {
			s.before = rows[len(rows)-1].EndedAt
		}
		s.buf = rows
	}
	if len(s.buf) == 0 {
		return Row{}, false, nil
	}
	return s.buf[0], true, nil
}

// next takes the newer of the two streams' next rows.
func next(a, b *stream) (Row, bool, error) {
	ra, oka, err := a.peek()
	if err != nil {
		return Row{}, false, err
	}
	rb, okb, err := b.peek()
	if err != nil {
		return Row{}, false, err
	}
	switch {
	case !oka && !okb:
		return Row{}, false, nil
	case oka && (!okb || !ra.EndedAt.Before(rb.EndedAt)):
		a.buf = a.buf[1:]
		return ra, true, nil
	}
	b.buf = b.buf[1:]
	return rb, true, nil
}

func (l *Log) taskRows(before time.Time) ([]Row, error) {
	ts, err := l.src.FinishedTasksBefore(before, chunk)
	if err != nil {
		return nil, err
	}
	rows := make([]Row, 0, len(ts))
	for _, t := range ts {
		rows = append(rows, l.taskRow(t))
	}
	return rows, nil
}

func (l *Log) taskRow(t task.Task) Row {
	r := Row{Kind: KindTask, ID: t.ID, Title: t.Title, Chat: t.ParentConversationID, Outcome: string(t.Status),
		Provider: t.Provider, Model: t.Model, StartedAt: t.CreatedAt}
	switch {
	case t.RoutineID != "":
		r.Kind = KindRoutine
	case t.Kind == task.Helper:
		r.Kind = KindHelper
	}
	if r.Chat == "" {
		r.Chat = t.ConversationID
	}
	if t.StartedAt != nil {
		r.StartedAt = *t.StartedAt
	}
	r.EndedAt = r.StartedAt
	if t.EndedAt != nil {
		r.EndedAt = *t.EndedAt
	}
	r.DurationMs = max(r.EndedAt.Sub(r.StartedAt).Milliseconds(), 0)
	if t.ConversationID != "" {
		if c, err := l.src.Conversation(t.ConversationID); err == nil {
			r.Spent = c.Spent // a chat task spends through its chat
		}
	}
	return r
}

func (l *Log) turnRows(before time.Time) ([]Row, error) {
	ts, err := l.src.TurnsBefore(before, chunk)
	if err != nil {
		return nil, err
	}
	rows := make([]Row, 0, len(ts))
	for _, t := range ts {
		r := Row{Kind: KindTurn, ID: t.Conversation, Chat: t.Conversation, Outcome: t.Outcome, Provider: t.Provider,
			Model: t.Model, StartedAt: t.StartedAt, EndedAt: t.EndedAt, Spent: t.Spent,
			DurationMs: max(t.EndedAt.Sub(t.StartedAt).Milliseconds(), 0)}
		if c, err := l.src.Conversation(t.Conversation); err == nil {
			r.Title = c.Title
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].EndedAt.After(rows[j].EndedAt) })
	return rows, nil
}
