package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/task"
)

// seedFinished stores n finished tasks (every fourth failed, the rest
// done; every third titled "deploy …") that ended a second apart, and
// returns their ids, the most recently ended first.
func seedFinished(t testing.TB, st *store.Bolt, n int) []string {
	t.Helper()
	base := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	ids := make([]string, n)
	ts := make([]task.Task, n)
	for i := range n {
		ids[n-1-i] = fmt.Sprintf("task-%05d", i)
		ended := base.Add(time.Duration(i) * time.Second)
		ts[i] = task.Task{
			ID: fmt.Sprintf("task-%05d", i), Kind: task.Background, Provider: "shell", Mode: task.Auto,
			Status: task.Done, Title: fmt.Sprintf("build %d", i), Text: "true", Steps: []string{},
			CreatedAt: ended.Add(-time.Second), EndedAt: &ended, Rev: 2, Wake: task.WakeNone,
		}
		if i%4 == 0 {
			ts[i].Status = task.Failed
		}
		if i%3 == 0 {
			ts[i].Title = fmt.Sprintf("Deploy %d to staging", i)
		}
	}
	if err := st.PutTasks(ts); err != nil {
		t.Fatal(err)
	}
	return ids
}

func (e *env) list(t testing.TB, query string) service.TaskList {
	t.Helper()
	resp, b := e.do(t, req{method: "GET", path: "/api/tasks" + query})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/tasks%s: %d %s", query, resp.StatusCode, b)
	}
	var l service.TaskList
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("GET /api/tasks%s: %v: %s", query, err, b)
	}
	return l
}

func idsOf(ts []task.Task) []string {
	out := make([]string, len(ts))
	for i, tk := range ts {
		out[i] = tk.ID
	}
	return out
}

// The list answers a page, not every task: the overview holds what is not
// finished and the newest finished ones; cursors walk the rest, each task
// once, in the order the page shows them; counts are of every task.
func TestTheTaskListPages(t *testing.T) {
	const n = 650
	var ids []string
	e := setupSeeded(t, "", func(st *store.Bolt) { ids = seedFinished(t, st, n) })
	running := e.create(t, `{"text":"sleep 30","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	e.waitStatus(t, running.ID, task.Running)
	t.Cleanup(func() { e.do(t, req{method: "POST", path: "/api/tasks/" + running.ID + "/stop"}) })

	first := e.list(t, "")
	if len(first.Tasks) != 1+service.DefaultPage || first.Tasks[0].ID != running.ID {
		t.Fatalf("overview: %d tasks, first %v", len(first.Tasks), idsOf(first.Tasks[:1]))
	}
	if got := idsOf(first.Tasks[1:]); !slices.Equal(got, ids[:service.DefaultPage]) {
		t.Fatalf("overview's finished tasks are not the newest, newest first: %v…", got[:3])
	}
	wantCounts := map[task.Status]int{task.Running: 1, task.Failed: (n + 3) / 4, task.Done: n - (n+3)/4}
	for s, c := range wantCounts {
		if first.Counts[s] != c {
			t.Errorf("counts[%s] = %d, want %d (%v)", s, first.Counts[s], c, first.Counts)
		}
	}
	if first.Concurrent.Background.Running != 1 {
		t.Errorf("concurrent: %+v", first.Concurrent)
	}

	// The overview's cursor goes on through the finished group.
	got := idsOf(first.Tasks[1:])
	for cursor := first.Next; cursor != ""; {
		p := e.list(t, "?limit=200&cursor="+url.QueryEscape(cursor))
		if len(p.Tasks) > 200 {
			t.Fatalf("a page of %d, asked for 200", len(p.Tasks))
		}
		got = append(got, idsOf(p.Tasks)...)
		cursor = p.Next
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("paging gave %d tasks, want every one of %d once, newest first", len(got), n)
	}

	// One group, some statuses, words of the title.
	failed := e.list(t, "?status=failed&limit=500")
	for _, tk := range failed.Tasks {
		if tk.Status != task.Failed {
			t.Fatalf("status=failed gave a %s task", tk.Status)
		}
	}
	if len(failed.Tasks) != wantCounts[task.Failed] || failed.Next != "" {
		t.Fatalf("status=failed: %d tasks, next %q; want %d", len(failed.Tasks), failed.Next, wantCounts[task.Failed])
	}
	search := e.list(t, "?group=finished&q="+url.QueryEscape("STAGING deploy")+"&limit=500")
	if want := (n + 2) / 3; len(search.Tasks) != want {
		t.Fatalf("q=STAGING deploy: %d tasks, want %d", len(search.Tasks), want)
	}
	both := e.list(t, "?status=failed,done&q=staging&limit=500")
	if want := (n + 2) / 3; len(both.Tasks) != want {
		t.Fatalf("status=failed,done&q=staging: %d tasks, want %d", len(both.Tasks), want)
	}
	if w := e.list(t, "?group=working"); len(w.Tasks) != 1 || w.Tasks[0].ID != running.ID {
		t.Fatalf("group=working: %v", idsOf(w.Tasks))
	}
	if c := e.list(t, "?conversation=no-such-chat"); len(c.Tasks) != 0 || c.Next != "" {
		t.Fatalf("conversation=no-such-chat: %v", idsOf(c.Tasks))
	}
}

// A search without a group narrows the overview: the tasks not finished
// and the finished ones alike keep only titles with every word, and the
// overview's cursor goes on through the finished ones the search keeps.
func TestTheOverviewSearchNarrowsEveryTask(t *testing.T) {
	const n = 250
	var ids []string
	e := setupSeeded(t, "", func(st *store.Bolt) { ids = seedFinished(t, st, n) })
	sleeping := e.create(t, `{"text":"sleep 30","title":"Deploy the site","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	other := e.create(t, `{"text":"sleep 30","title":"Run the unit tests","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	for _, id := range []string{sleeping.ID, other.ID} {
		e.waitStatus(t, id, task.Running)
		t.Cleanup(func() { e.do(t, req{method: "POST", path: "/api/tasks/" + id + "/stop"}) })
	}
	var want []string // the finished deploys, newest first
	for _, id := range ids {
		var i int
		fmt.Sscanf(id, "task-%05d", &i)
		if i%3 == 0 {
			want = append(want, id)
		}
	}

	first := e.list(t, "?q="+url.QueryEscape("DEPLOY")+"&limit=40")
	if len(first.Tasks) == 0 || first.Tasks[0].ID != sleeping.ID {
		t.Fatalf("q=DEPLOY: first of %d is not the running deploy: %v", len(first.Tasks), idsOf(first.Tasks[:min(3, len(first.Tasks))]))
	}
	got := idsOf(first.Tasks[1:])
	for _, tk := range first.Tasks {
		if tk.ID == other.ID {
			t.Fatalf("q=DEPLOY kept the running %q", tk.Title)
		}
	}
	for cursor := first.Next; cursor != ""; {
		p := e.list(t, "?q=deploy&limit=40&cursor="+url.QueryEscape(cursor))
		got = append(got, idsOf(p.Tasks)...)
		cursor = p.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("q=deploy paged %d finished tasks, want the %d deploys newest first", len(got), len(want))
	}
	if none := e.list(t, "?q=nothing+has+this"); len(none.Tasks) != 0 || none.Next != "" {
		t.Fatalf("q with no match: %v, next %q", idsOf(none.Tasks), none.Next)
	}
	if all := e.list(t, ""); len(all.Tasks) != 2+service.DefaultPage {
		t.Fatalf("the overview without q: %d tasks, want both running and a page", len(all.Tasks))
	}
}

// What the list cannot mean is a 400 that says why, and the list is still
// there after it.
func TestTheTaskListRefusesWhatItCannotMean(t *testing.T) {
	e := setupSeeded(t, "", func(st *store.Bolt) { seedFinished(t, st, 5) })
	valid := e.list(t, "?limit=2").Next
	for _, q := range []string{
		"?limit=0", "?limit=-1", "?limit=501", "?limit=ten", "?limit=1e3",
		"?group=later", "?status=sleeping", "?status=running&group=finished", "?status=running,done",
		"?cursor=%%%", "?cursor=bm90LWEtY3Vyc29y", "?group=working&cursor=" + url.QueryEscape(valid),
		"?conversation=c1&group=finished", "?conversation=c1&q=x", "?sort=title",
		"?q=" + url.QueryEscape(string(make([]byte, 201))),
	} {
		resp, b := e.do(t, req{method: "GET", path: "/api/tasks" + q})
		wantError(t, resp, b, http.StatusBadRequest, "invalid")
	}
	if l := e.list(t, ""); len(l.Tasks) != 5 {
		t.Fatalf("after the refusals: %d tasks", len(l.Tasks))
	}
}

// FuzzTaskListQuery sends arbitrary query strings to GET /api/tasks: every
// answer is a 200 with a list (each task in the statuses asked for, no
// more than the limit) or a 400 with a JSON error, never a 500 or a panic.
func FuzzTaskListQuery(f *testing.F) {
	for _, s := range []string{"", "limit=3", "status=failed,done&q=build", "group=finished&cursor=Z2ZpbmlzaGVkAAAA", "cursor=%%%",
		"conversation=x&limit=500", "status=needs-you", "q=%00", "limit=99999999999999999999", "status=,,,,"} {
		f.Add(s)
	}
	e := setupSeeded(f, "/bin/true", func(st *store.Bolt) { seedFinished(f, st, 30) })
	f.Fuzz(func(t *testing.T, query string) {
		resp, b := e.do(t, req{method: "GET", path: "/api/tasks?" + url.PathEscape(query)})
		switch resp.StatusCode {
		case http.StatusOK:
			var l service.TaskList
			if err := json.Unmarshal(b, &l); err != nil || l.Counts == nil {
				t.Fatalf("200 without a list: %s", b)
			}
			if len(l.Tasks) > service.MaxPage {
				t.Fatalf("%d tasks in one page", len(l.Tasks))
			}
		case http.StatusBadRequest:
			wantError(t, resp, b, http.StatusBadRequest, "invalid")
		default:
			t.Fatalf("status %d for %q: %s", resp.StatusCode, query, b)
		}
	})
}
