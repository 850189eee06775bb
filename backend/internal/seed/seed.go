// Package seed fills a Conch home's store with finished tasks, as a year
// of heavy use would leave it, for the benchmarks and the UI's scale runs:
// it writes through the store (one transaction per batch), never through
// the API, and a home a Conch holds is refused by the store's lock.
package seed

import (
	"fmt"
	"path/filepath"
	"time"

	"conch/backend/store"
	"conch/backend/task"
)

// titles are what the seeded tasks are called, in turn.
var titles = []string{
	"Run the unit tests", "Build the release", "Deploy to staging", "Lint the frontend",
	"Check the migrations", "Mock the Stripe webhook", "Update the changelog", "Rebuild the search index",
	"Back up the database", "Profile the start-up", "Fix the flaky test", "Bump the dependencies",
}

// Tasks adds n finished shell tasks to the store in home, the newest ending
// at now, one a minute before the other; every eighth failed, every
// twentieth stopped.
func Tasks(home string, n int, now time.Time) error {
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	const batch = 5000
	stamp := now.UTC().Format("150405")
	for from := 0; from < n; from += batch {
		ts := make([]task.Task, 0, batch)
		for i := from; i < min(n, from+batch); i++ {
			ended := now.Add(-time.Duration(i) * time.Minute).UTC()
			started := ended.Add(-3 * time.Second)
			code := 0
			t := task.Task{
				ID: fmt.Sprintf("seed-%s-%07d", stamp, i), Kind: task.Background, Provider: "shell", Mode: task.Auto,
				Status: task.Done, Title: fmt.Sprintf("%s #%d", titles[i%len(titles)], i), Text: "true",
				Steps: []string{"Started true", "Exited with code 0"}, Summary: "ok", Wake: task.WakeNone, Notified: true,
				CreatedAt: started.Add(-time.Second), StartedAt: &started, EndedAt: &ended, ExitCode: &code, Rev: 5,
				Result: &task.Result{Text: "ok", Source: task.SourceExit, At: ended},
			}
			switch {
			case i%20 == 0:
				t.Status, t.ExitCode, t.Result, t.Summary = task.Stopped, nil, nil, ""
			case i%8 == 0:
				code = 1
				t.Status, t.Result, t.Error = task.Failed, nil, "exited with code 1"
			}
			ts = append(ts, t)
		}
		if err := st.PutTasks(ts); err != nil {
			return err
		}
	}
	return nil
}
