package store

import (
	"errors"
	"fmt"
	"testing"

	"conch/backend/conversation"
)

func newConversation(id string) conversation.Conversation {
	return conversation.Conversation{
		ID: id, Title: "chat " + id, Origin: conversation.Origin{Kind: conversation.FromChat},
		Provider: "p", Model: "m", Mode: "ask", Cwd: "/tmp", CreatedAt: epoch, UpdatedAt: epoch, Rev: 1,
	}
}

func messages(c *conversation.Conversation, n int) []conversation.Message {
	var ms []conversation.Message
	for range n {
		c.LastSeq++
		ms = append(ms, conversation.Message{
			ID: fmt.Sprintf("%s-%d", c.ID, c.LastSeq), ConversationID: c.ID, Seq: c.LastSeq,
			Kind: conversation.User, Text: fmt.Sprintf("message %d", c.LastSeq), CreatedAt: epoch,
		})
	}
	return ms
}

func seqs(ms []conversation.Message) []uint64 {
	out := []uint64{}
	for _, m := range ms {
		out = append(out, m.Seq)
	}
	return out
}

func TestConversationsReopen(t *testing.T) {
	s, path := openTest(t)
	a, b := newConversation("a"), newConversation("ab") // "a" is a prefix of "ab"
	b.CreatedAt = epoch.Add(1)
	if err := s.PutConversation(a, messages(&a, 300)...); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConversation(b, messages(&b, 2)...); err != nil {
		t.Fatal(err)
	}
	a.Tainted = true
	if err := s.PutConversation(a, messages(&a, 1)...); err != nil {
		t.Fatal(err)
	}

	s = reopen(t, s, path)
	got, err := s.Conversation("a")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Tainted || got.LastSeq != 301 {
		t.Errorf("conversation a = %+v, want tainted with lastSeq 301", got)
	}
	all, err := s.Conversations()
	if err != nil || len(all) != 2 || all[0].ID != "a" || all[1].ID != "ab" {
		t.Fatalf("Conversations = %v, %v", all, err)
	}
	if _, err := s.Conversation("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown conversation: %v, want ErrNotFound", err)
	}

	ms, more, err := s.Messages("a", 0, 0)
	if err != nil || more || len(ms) != 301 || ms[0].Seq != 1 || ms[300].Seq != 301 || ms[300].Text != "message 301" {
		t.Fatalf("all messages of a: %d, more %v, %v", len(ms), more, err)
	}
	ms, _, _ = s.Messages("ab", 0, 0)
	if fmt.Sprint(seqs(ms)) != "[1 2]" {
		t.Errorf("messages of ab = %v, want [1 2]", seqs(ms))
	}
}

func TestMessagesPaging(t *testing.T) {
	s, _ := openTest(t)
	c := newConversation("c")
	other := newConversation("d")
	if err := s.PutConversation(c, messages(&c, 7)...); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConversation(other, messages(&other, 3)...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		before uint64
		limit  int
		want   string
		more   bool
	}{
		{0, 3, "[5 6 7]", true},
		{5, 3, "[2 3 4]", true},
		{2, 3, "[1]", false},
		{1, 3, "[]", false},
		{0, 7, "[1 2 3 4 5 6 7]", false},
		{100, 2, "[6 7]", true},
		{4, 0, "[1 2 3]", false},
	} {
		ms, more, err := s.Messages("c", tc.before, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(seqs(ms)); got != tc.want || more != tc.more {
			t.Errorf("Messages(before %d, limit %d) = %s more %v, want %s more %v", tc.before, tc.limit, got, more, tc.want, tc.more)
		}
	}
	ms, more, err := s.Messages("none", 0, 10)
	if err != nil || more || len(ms) != 0 {
		t.Errorf("messages of an unknown conversation: %v %v %v", ms, more, err)
	}
}

func TestPutConversationRefusesStrayMessages(t *testing.T) {
	s, _ := openTest(t)
	c := newConversation("c")
	bad := conversation.Message{ID: "x", ConversationID: "other", Seq: 1}
	if err := s.PutConversation(c, bad); err == nil {
		t.Fatal("a message of another conversation was accepted")
	}
	if _, err := s.Conversation("c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the conversation was written anyway: %v", err)
	}
}
