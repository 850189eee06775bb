package activity_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"conch/backend/activity"
	"conch/backend/conversation"
	"conch/backend/store"
	"conch/backend/task"
)

var zone = time.FixedZone("here", 2*3600)

func openStore(t *testing.T) *store.Bolt {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// finished stores a task that ran from start for d and ended as status;
// a chat task's chat spent spent.
func finished(t *testing.T, st *store.Bolt, title string, kind task.Kind, status task.Status, start time.Time, d time.Duration, spent float64) task.Task {
	t.Helper()
	end := start.Add(d)
	tk := task.Task{ID: store.NewID(), Kind: kind, Status: status, Title: title, Text: title, Mode: task.Auto, Cwd: "/",
		Provider: "shell", CreatedAt: start, StartedAt: &start, EndedAt: &end, ParentConversationID: "parent"}
	if spent > 0 {
		c := conversation.Conversation{ID: store.NewID(), Title: title, Origin: conversation.Origin{Kind: conversation.FromTask, TaskID: tk.ID},
			Mode: task.Auto, Cwd: "/", Spent: spent, CreatedAt: start, UpdatedAt: end, Rev: 1}
		if err := st.PutConversation(c); err != nil {
			t.Fatal(err)
		}
		tk.ConversationID, tk.Provider = c.ID, "claude"
	}
	if err := st.PutTask(tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

func turn(t *testing.T, st *store.Bolt, chat conversation.Conversation, outcome string, start time.Time, d time.Duration, spent float64) {
	t.Helper()
	if err := st.PutTurn(store.Turn{Conversation: chat.ID, Provider: "claude", StartedAt: start, EndedAt: start.Add(d), Outcome: outcome, Spent: spent}); err != nil {
		t.Fatal(err)
	}
}

func TestActivityIsDayByDayNewestFirstWithEachDaysSpend(t *testing.T) {
	st := openStore(t)
	day1 := time.Date(2026, 12, 1, 9, 0, 0, 0, zone)
	day2 := day1.AddDate(0, 0, 1)
	chat := conversation.Conversation{ID: store.NewID(), Title: "Release notes", Origin: conversation.Origin{Kind: conversation.FromChat},
		Mode: task.Ask, Cwd: "/", CreatedAt: day1, UpdatedAt: day1, Rev: 1}
	if err := st.PutConversation(chat); err != nil {
		t.Fatal(err)
	}
	finished(t, st, "Run the tests", task.Background, task.Done, day1, time.Minute, 0)
	finished(t, st, "Fix the flaky test", task.Helper, task.Failed, day1.Add(time.Hour), 2*time.Minute, 0.25)
	turn(t, st, chat, "done", day1.Add(2*time.Hour), 10*time.Second, 0.05)
	finished(t, st, "Deploy", task.Background, task.Stopped, day2, time.Second, 1.5)
	nightly := finished(t, st, "Nightly backup", task.Background, task.Done, day2.Add(-2*time.Hour), time.Second, 0)
	nightly.RoutineID = "r1"
	if err := st.PutTask(nightly); err != nil {
		t.Fatal(err)
	}
	turn(t, st, chat, "failed", day2.Add(time.Hour), time.Second, 0)

	p, err := activity.New(st).Page(activity.Query{Zone: zone})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Days) != 2 || p.Days[0].Date != "2026-12-02" || p.Days[1].Date != "2026-12-01" {
		t.Fatalf("days %+v; want Dec 2 then Dec 1", p.Days)
	}
	if got := p.Days[0].Rows; len(got) != 3 || got[0].Kind != activity.KindTurn || got[0].Outcome != "failed" || got[1].Title != "Deploy" || got[2].Kind != activity.KindRoutine {
		t.Fatalf("Dec 2 rows %+v", got)
	}
	d1 := p.Days[1]
	if len(d1.Rows) != 3 || d1.Rows[0].Kind != activity.KindTurn || d1.Rows[0].Title != "Release notes" || d1.Rows[1].Kind != activity.KindHelper {
		t.Fatalf("Dec 1 rows %+v", d1.Rows)
	}
	if d1.Rows[1].DurationMs != 120000 || d1.Rows[1].Spent != 0.25 || d1.Rows[1].Chat != "parent" {
		t.Fatalf("the helper's row %+v", d1.Rows[1])
	}
	if d1.Spent != 0.30 || p.Days[0].Spent != 1.5 {
		t.Fatalf("day spends %v and %v; want 1.5 and 0.30", p.Days[0].Spent, d1.Spent)
	}
	if p.Next != "" {
		t.Fatalf("one page of everything has a next: %q", p.Next)
	}

	mine, err := activity.New(st).Page(activity.Query{Zone: zone, Chat: chat.ID})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mine.Days); n != 2 || len(mine.Days[0].Rows) != 1 || mine.Days[0].Rows[0].Kind != activity.KindTurn || mine.Days[1].Spent != 0.05 {
		t.Fatalf("one chat's rows: %+v", mine.Days)
	}

	failed, err := activity.New(st).Page(activity.Query{Zone: zone, Outcome: "failed"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(failed.Days); n != 2 || failed.Days[1].Spent != 0.25 {
		t.Fatalf("failed only: %+v", failed.Days)
	}
}

func TestActivityPagesWithoutLosingOrRepeatingARow(t *testing.T) {
	st := openStore(t)
	start := time.Date(2026, 11, 1, 8, 0, 0, 0, zone)
	want := map[string]bool{}
	for i := 0; i < 450; i++ {
		tk := finished(t, st, "task", task.Background, task.Done, start.Add(time.Duration(i)*37*time.Minute), time.Second, 0)
		want[tk.ID] = true
	}
	seen := map[string]bool{}
	var last time.Time
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := activity.New(st).Page(activity.Query{Zone: zone, Limit: 40, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Days {
			for _, r := range d.Rows {
				if seen[r.ID] {
					t.Fatalf("row %s came twice", r.ID)
				}
				if !last.IsZero() && r.EndedAt.After(last) {
					t.Fatalf("row %s is newer than the one before it", r.ID)
				}
				seen[r.ID], last = true, r.EndedAt
			}
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
		if pages > 30 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("paged through %d rows of %d", len(seen), len(want))
	}
}

func TestBadActivityQueriesAreRefused(t *testing.T) {
	st := openStore(t)
	for _, q := range []activity.Query{{Outcome: "great"}, {Kind: "nap"}, {Limit: 999}, {Limit: -1}, {Cursor: "yesterday"}} {
		if _, err := activity.New(st).Page(q); !errors.Is(err, activity.ErrInvalid) {
			t.Errorf("Page(%+v) gave %v; want ErrInvalid", q, err)
		}
	}
}
