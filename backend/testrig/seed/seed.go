// Package seed fills a Conch home's store with finished tasks and chats, as
// a year of heavy use would leave it, for the benchmarks and the UI's scale
// runs:
// it writes through the store (one transaction per batch), never through
// the API, and a home a Conch holds is refused by the store's lock.
package seed

import (
	"fmt"
	"path/filepath"
	"time"

	"conch/backend/conversation"
	"conch/backend/store"
	"conch/backend/task"
)

// titles are what the seeded tasks are called, in turn.
var titles = []string{
	"Run the unit tests", "Build the release", "Deploy to staging", "Lint the frontend",
	"Check the migrations", "Mock the Stripe webhook", "Update the changelog", "Rebuild the search index",
	"Back up the database", "Profile the start-up", "Fix the flaky test", "Bump the dependencies",
}

// ChatsPer is how many tasks there are to one chat of the person's.
const ChatsPer = 50

// Tasks adds n finished tasks to the store in home, the newest ending at
// now, one a minute before the other; every eighth failed, every twentieth
// stopped. Every fourth was sent from a chat and has a chat of its own (a
// request and a reply); there is one chat of the person's for every
// ChatsPer tasks, each with a question and an answer.
func Tasks(home string, n int, now time.Time) error {
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	const batch = 5000
	stamp := now.UTC().Format("150405")
	chats := max(1, n/ChatsPer)
	for from := 0; from < n; from += batch {
		ts := make([]task.Task, 0, batch)
		var cs []conversation.Conversation
		var msgs []conversation.Message
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
			if i%4 == 1 {
				parent := chatID(stamp, (i/ChatsPer)%chats)
				c := conversation.Conversation{
					ID: fmt.Sprintf("seedc-%s-%07d", stamp, i), Title: t.Title, Provider: "ollama", Model: "qwen3", Mode: task.Ask, Cwd: "/",
					Origin:    conversation.Origin{Kind: conversation.FromTask, TaskID: t.ID, ParentID: parent},
					CreatedAt: t.CreatedAt, UpdatedAt: ended, LastSeq: 2, Rev: 4,
				}
				t.Provider, t.Model, t.Mode, t.Text = c.Provider, c.Model, task.Ask, t.Title
				t.ConversationID, t.ParentConversationID = c.ID, parent
				t.Steps, t.ExitCode = []string{"Read the README", "Reported"}, nil
				if t.Result != nil {
					t.Result.Source = task.SourceReport
				}
				if t.Status == task.Failed {
					t.Error = "Ollama stopped answering"
				}
				cs = append(cs, c)
				msgs = append(msgs, exchange(c.ID, t.Title, "Done: "+t.Title+".", c.CreatedAt)...)
			}
			ts = append(ts, t)
		}
		if err := st.PutTasks(ts); err != nil {
			return err
		}
		if err := st.PutConversations(cs, msgs...); err != nil {
			return err
		}
	}
	// The person's chats, each changed a little after its last task ended.
	cs := make([]conversation.Conversation, 0, chats)
	var msgs []conversation.Message
	for i := 0; i < chats; i++ {
		at := now.Add(-time.Duration(i*ChatsPer)*time.Minute + time.Second).UTC()
		c := conversation.Conversation{
			ID: chatID(stamp, i), Title: fmt.Sprintf("%s, chat %d", chatTitles[i%len(chatTitles)], i), Provider: "ollama", Model: "qwen3",
			Mode: task.Ask, Cwd: "/", Origin: conversation.Origin{Kind: conversation.FromChat}, CreatedAt: at.Add(-time.Hour), UpdatedAt: at, LastSeq: 2, Rev: 3,
		}
		cs = append(cs, c)
		msgs = append(msgs, exchange(c.ID, "What is left to do on "+c.Title+"?", "Two tasks are still open.", c.CreatedAt)...)
	}
	return st.PutConversations(cs, msgs...)
}

// chatTitles are what the person's seeded chats are about, in turn.
var chatTitles = []string{"Release planning", "The flaky CI job", "Billing migration", "Search relevance", "Onboarding copy", "Postgres upgrade"}

func chatID(stamp string, i int) string { return fmt.Sprintf("seedp-%s-%05d", stamp, i) }

// exchange is a request and its reply in conversation id.
func exchange(id, ask, reply string, at time.Time) []conversation.Message {
	return []conversation.Message{
		{ID: id + "-1", ConversationID: id, Seq: 1, Kind: conversation.User, Text: ask, CreatedAt: at},
		{ID: id + "-2", ConversationID: id, Seq: 2, Kind: conversation.Assistant, Text: reply, CreatedAt: at.Add(2 * time.Second)},
	}
}
