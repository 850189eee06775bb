package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"conch/backend/conversation"
)

// Conversations is the part of the store that keeps chats and their
// append-only messages. *Bolt implements it.
type Conversations interface {
	// Conversation returns one conversation, or ErrNotFound.
	Conversation(id string) (conversation.Conversation, error)
	// Chats is a page of the person's chats, the most recently changed
	// first, whose titles hold every word of query.
	Chats(query, cursor string, limit int) (ChatPage, error)
	// TaskChatsOf are the chats of the tasks sent from chat parent.
	TaskChatsOf(parent string) ([]conversation.Conversation, error)
	// ChatsInJob are the chats of a delegate's helpers.
	ChatsInJob(job string) ([]conversation.Conversation, error)
	// UnsettledConversations are those stored as replying or asking.
	UnsettledConversations() ([]conversation.Conversation, error)
	// AskingChats are the person's chats waiting for an answer.
	AskingChats() ([]conversation.Conversation, error)
	// PutConversation writes c and appends msgs in one transaction; when it
	// returns nil, all of it is durable.
	PutConversation(c conversation.Conversation, msgs ...conversation.Message) error
	// Messages returns up to limit messages of a conversation with seq
	// below before (0: from the newest), oldest first, and whether older
	// ones remain.
	Messages(conversationID string, before uint64, limit int) ([]conversation.Message, bool, error)
	// PutTurn records one reply of a chat nobody else ran it for.
	PutTurn(t Turn) error
}

var _ Conversations = (*Bolt)(nil)

// messageKey is the key of a message: the conversation's id, a zero byte and
// the big-endian seq.
func messageKey(conversationID string, seq uint64) []byte {
	k := make([]byte, 0, len(conversationID)+9)
	k = append(k, conversationID...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// Conversation returns the conversation with id, or an error matching
// ErrNotFound.
func (b *Bolt) Conversation(id string) (conversation.Conversation, error) {
	var c conversation.Conversation
	err := b.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketConvs).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		var err error
		c, err = decodeConversation([]byte(id), v)
		return err
	})
	if err != nil {
		return conversation.Conversation{}, fmt.Errorf("get conversation %s: %w", id, err)
	}
	return c, nil
}

// Conversations returns every conversation, oldest (CreatedAt, then ID)
// first: for a check against every record (tests); Conch itself reads
// through the index. Records that cannot be decoded are left out and named in an error
// matching ErrCorrupt, returned with the others.
func (b *Bolt) Conversations() ([]conversation.Conversation, error) {
	cs := []conversation.Conversation{}
	var bad []error
	err := b.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketConvs).ForEach(func(k, v []byte) error {
			c, err := decodeConversation(k, v)
			if err != nil {
				bad = append(bad, err)
				return nil
			}
			cs = append(cs, c)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	slices.SortFunc(cs, func(a, b conversation.Conversation) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(bad) > 0 {
		return cs, fmt.Errorf("list conversations: %d unreadable: %w", len(bad), errors.Join(bad...))
	}
	return cs, nil
}

// PutConversation writes c and appends msgs in one transaction. Every
// message must belong to c and carry a seq above 0; the caller numbers
// them (c.LastSeq is the newest).
func (b *Bolt) PutConversation(c conversation.Conversation, msgs ...conversation.Message) error {
	return b.PutConversations([]conversation.Conversation{c}, msgs...)
}

// PutConversations writes many conversations and their messages in one
// transaction (seeding, restoring): each message must belong to one of cs.
func (b *Bolt) PutConversations(cs []conversation.Conversation, msgs ...conversation.Message) error {
	ids := make(map[string]bool, len(cs))
	ops := make([]op, 0, len(cs)+len(msgs))
	for _, c := range cs {
		if c.ID == "" {
			return errors.New("put conversation: empty id")
		}
		v, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("put conversation %s: encode: %w", c.ID, err)
		}
		ids[c.ID] = true
		ops = append(ops, op{bucket: bucketConvs, key: []byte(c.ID), value: v, convIndex: true, entries: convIndexOf(c)})
	}
	for _, m := range msgs {
		if !ids[m.ConversationID] || m.Seq == 0 {
			return fmt.Errorf("put conversation: message %q has conversation %q and seq %d, not one of those put", m.ID, m.ConversationID, m.Seq)
		}
		mv, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("put conversation %s: encode message %d: %w", m.ConversationID, m.Seq, err)
		}
		ops = append(ops, op{bucket: bucketMsgs, key: messageKey(m.ConversationID, m.Seq), value: mv})
	}
	if err := b.submit(ops...); err != nil {
		return fmt.Errorf("put %d conversations: %w", len(cs), err)
	}
	return nil
}

// Messages returns up to limit messages of the conversation with seq below
// before (before 0: from the newest), oldest first, and whether older ones
// remain. limit <= 0 returns them all.
func (b *Bolt) Messages(conversationID string, before uint64, limit int) ([]conversation.Message, bool, error) {
	msgs := []conversation.Message{}
	more := false
	prefix := append([]byte(conversationID), 0)
	err := b.view(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bucketMsgs).Cursor()
		// Seek to the first key at or past the page's end, then step back:
		// the end is this conversation's seq before, or (before 0) the
		// first key past the conversation's range.
		end := messageKey(conversationID, before)
		if before == 0 {
			end = append([]byte(conversationID), 1)
		}
		k, _ := cur.Seek(end)
		var v []byte
		if k == nil {
			k, v = cur.Last()
		} else {
			k, v = cur.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Prev() {
			if limit > 0 && len(msgs) == limit {
				more = true
				break
			}
			var m conversation.Message
			if err := json.Unmarshal(v, &m); err != nil {
				return fmt.Errorf("decode message %x: %w: %w", k, ErrCorrupt, err)
			}
			msgs = append(msgs, m)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list messages of %s: %w", conversationID, err)
	}
	slices.Reverse(msgs)
	return msgs, more, nil
}

// decodeConversation decodes a stored conversation, refusing one stored
// under another id's key.
func decodeConversation(key, value []byte) (conversation.Conversation, error) {
	var c conversation.Conversation
	if err := json.Unmarshal(value, &c); err != nil {
		return conversation.Conversation{}, fmt.Errorf("decode conversation %q: %w: %w", key, ErrCorrupt, err)
	}
	if !bytes.Equal([]byte(c.ID), key) {
		return conversation.Conversation{}, fmt.Errorf("decode conversation %q: %w: record says id %q", key, ErrCorrupt, c.ID)
	}
	return c, nil
}
