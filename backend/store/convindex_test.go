package store

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"conch/backend/ask"
	"conch/backend/conversation"
)

func convIDs(cs []conversation.Conversation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func dumpBucket(t *testing.T, s *Bolt, name []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(name).ForEach(func(k, v []byte) error {
			out[string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// allChats reads every page of the person's chats matching query.
func allChats(t *testing.T, s *Bolt, query string, limit int) []conversation.Conversation {
	t.Helper()
	var out []conversation.Conversation
	cursor := ""
	for {
		p, err := s.Chats(query, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Conversations) > limit {
			t.Fatalf("a page of %d holds %d", limit, len(p.Conversations))
		}
		out = append(out, p.Conversations...)
		if cursor = p.Next; cursor == "" {
			return out
		}
	}
}

// Whatever happens to the conversations, every list the index answers is
// what reading every record gives, and the index is what building it from
// the records would give, also for a database from before it.
func TestTheConversationIndexIsWhatTheRecordsSay(t *testing.T) {
	s, path := openTest(t)
	r := rand.New(rand.NewPCG(3, 4))
	convs := map[string]conversation.Conversation{}
	for i := 0; i < 500; i++ {
		id := fmt.Sprintf("c%02d", r.IntN(60))
		c, ok := convs[id]
		if !ok {
			c = conversation.Conversation{ID: id, Origin: conversation.Origin{Kind: conversation.FromChat}, CreatedAt: minute0}
			if r.IntN(2) == 0 {
				c.Origin = conversation.Origin{Kind: conversation.FromTask, TaskID: "t" + id, ParentID: fmt.Sprintf("c%02d", r.IntN(5))}
			}
			if r.IntN(4) == 0 {
				c.JobID = fmt.Sprintf("job-%d", r.IntN(3))
			}
		}
		c.Title = fmt.Sprintf("Plan %d for %s", r.IntN(7), id)
		c.Running = r.IntN(4) == 0
		c.Ask = nil
		if r.IntN(5) == 0 {
			c.Ask = &ask.Question{ID: "q", Tool: "run_command"}
			if r.IntN(3) == 0 {
				c.Ask.Answer = ask.Allowed
			}
		}
		// Some share a time, so the id breaks the tie.
		c.UpdatedAt = minute0.Add(time.Duration(r.IntN(300)) * time.Second)
		c.Rev++
		if err := s.PutConversation(c); err != nil {
			t.Fatal(err)
		}
		convs[id] = c
	}
	want := func(keep func(c conversation.Conversation) bool) []string {
		var out []conversation.Conversation
		for _, c := range convs {
			if keep(c) {
				out = append(out, c)
			}
		}
		slices.SortFunc(out, func(a, b conversation.Conversation) int {
			if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		return convIDs(out)
	}
	sorted := func(cs []conversation.Conversation, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		got := convIDs(cs)
		slices.Sort(got)
		return got
	}
	sortedWant := func(keep func(c conversation.Conversation) bool) []string {
		w := want(keep)
		slices.Sort(w)
		return w
	}
	check := func(s *Bolt) {
		t.Helper()
		personal := func(c conversation.Conversation) bool { return c.Origin.Kind == conversation.FromChat }
		for _, limit := range []int{1, 7, 100} {
			if got, w := convIDs(allChats(t, s, "", limit)), want(personal); !slices.Equal(got, w) {
				t.Fatalf("chats in pages of %d: %v, want %v", limit, got, w)
			}
		}
		got := convIDs(allChats(t, s, "PLAN 3", 4))
		if w := want(func(c conversation.Conversation) bool {
			return personal(c) && strings.Contains(strings.ToLower(c.Title), "plan") && strings.Contains(c.Title, "3")
		}); !slices.Equal(got, w) {
			t.Fatalf("chats titled Plan 3: %v, want %v", got, w)
		}
		for p := 0; p < 5; p++ {
			parent := fmt.Sprintf("c%02d", p)
			if got, w := sorted(s.TaskChatsOf(parent)), sortedWant(func(c conversation.Conversation) bool { return c.Origin.ParentID == parent }); !slices.Equal(got, w) {
				t.Fatalf("task chats of %s: %v, want %v", parent, got, w)
			}
		}
		for j := 0; j < 3; j++ {
			job := fmt.Sprintf("job-%d", j)
			if got, w := sorted(s.ChatsInJob(job)), sortedWant(func(c conversation.Conversation) bool { return c.JobID == job }); !slices.Equal(got, w) {
				t.Fatalf("chats in %s: %v, want %v", job, got, w)
			}
		}
		if got, w := sorted(s.UnsettledConversations()), sortedWant(func(c conversation.Conversation) bool { return c.Running || c.Ask != nil }); !slices.Equal(got, w) {
			t.Fatalf("unsettled: %v, want %v", got, w)
		}
		if got, w := sorted(s.AskingChats()), sortedWant(func(c conversation.Conversation) bool { return personal(c) && c.Ask != nil && c.Ask.Answer == "" }); !slices.Equal(got, w) {
			t.Fatalf("asking: %v, want %v", got, w)
		}
	}
	check(s)
	kept := dumpBucket(t, s, bucketConvIndex)
	// Make it a version 2 database: no conversation index, no mark.
	s2 := reopenChanged(t, s, path, func(db *bolt.DB) {
		if err := db.Update(func(tx *bolt.Tx) error {
			if err := tx.DeleteBucket(bucketConvIndex); err != nil {
				return err
			}
			meta := tx.Bucket(bucketMeta)
			_ = meta.Delete(keyConvIndexed)
			return meta.Put(keySchema, []byte("2"))
		}); err != nil {
			t.Fatal(err)
		}
	})
	rebuilt := dumpBucket(t, s2, bucketConvIndex)
	if len(kept) != len(rebuilt) {
		t.Fatalf("%d index entries kept, %d rebuilt", len(kept), len(rebuilt))
	}
	for k, v := range kept {
		if rv, ok := rebuilt[k]; !ok || rv != v {
			t.Fatalf("entry %q: kept %q, rebuilt %q (present %v)", k, v, rv, ok)
		}
	}
	check(s2)
}

// A conversation put with its messages is indexed in the same commit.
func TestAChatIsListedOnceWhateverItsChanges(t *testing.T) {
	s, _ := openTest(t)
	c := conversation.Conversation{ID: "a", Title: "First", Origin: conversation.Origin{Kind: conversation.FromChat}, CreatedAt: minute0, UpdatedAt: minute0, Rev: 1}
	for i := 1; i <= 20; i++ {
		c.UpdatedAt = minute0.Add(time.Duration(i) * time.Minute)
		c.Rev++
		c.LastSeq++
		if err := s.PutConversation(c, conversation.Message{ID: fmt.Sprint(i), ConversationID: "a", Seq: c.LastSeq, Kind: conversation.User, Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	got := allChats(t, s, "", 10)
	if len(got) != 1 || got[0].Rev != c.Rev {
		t.Fatalf("listed %d, first at rev %v; want one at rev %d", len(got), got, c.Rev)
	}
}

// FuzzChatCursor: any cursor gives a page of the person's chats or
// ErrBadCursor, never a panic or a task's chat.
func FuzzChatCursor(f *testing.F) {
	s, _ := openTest(f)
	for i := 0; i < 5; i++ {
		kind := conversation.FromChat
		if i%2 == 1 {
			kind = conversation.FromTask
		}
		c := conversation.Conversation{ID: fmt.Sprintf("f%d", i), Origin: conversation.Origin{Kind: kind, ParentID: "f0"}, UpdatedAt: minute0.Add(time.Duration(i) * time.Minute)}
		if err := s.PutConversation(c); err != nil {
			f.Fatal(err)
		}
	}
	first, _ := s.Chats("", "", 1)
	f.Add(first.Next)
	f.Add("")
	f.Add("Yw")
	f.Fuzz(func(t *testing.T, cursor string) {
		p, err := s.Chats("", cursor, 2)
		if err != nil {
			if err != ErrBadCursor {
				t.Fatalf("cursor %q: %v", cursor, err)
			}
			return
		}
		for _, c := range p.Conversations {
			if c.Origin.Kind != conversation.FromChat {
				t.Fatalf("cursor %q gave the task chat %s", cursor, c.ID)
			}
		}
	})
}
