package store

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	bolt "go.etcd.io/bbolt"

	"conch/backend/conversation"
)

// The conversation index lets Conch list the person's chats a page at a
// time and find the few conversations a change concerns (a chat's task
// chats, a job's helpers, the ones a crash left replying), without reading
// every record: most conversations are tasks' own chats, one per task. It
// is kept in the same transaction as the records (see indexConversation).
// Its keys, in bucketConvIndex:
//
//	c <updated, inverted> <id>  →  <title, lower case>   (the person's chats, newest first)
//	k <parent chat> 0 <id>      (a task's chat, by the chat it came from)
//	j <job> 0 <id>              (a helper's chat, by its delegate's job)
//	u 0 <id>                    (replying or asking: what healing settles)
//	a 0 <id>                    (a person's chat waiting for an answer)
//	r 0 <id>  →  its keys above (see indexed.encode)

var (
	bucketConvIndex = []byte("conversation-index")
	// keyConvIndexed records that the index was built, so a database from
	// before it is indexed once, at Open.
	keyConvIndexed = []byte("conversation-index-built-3")
)

// convEntries are c's index keys and values.
func convEntries(c conversation.Conversation) map[string][]byte {
	out := map[string][]byte{}
	if !c.Origin.IsRun() {
		k := binary.BigEndian.AppendUint64([]byte("c"), math.MaxUint64-nanos(c.UpdatedAt))
		out[string(append(k, c.ID...))] = []byte(strings.ToLower(c.Title))
		if c.Ask != nil && c.Ask.Answer == "" {
			out["a\x00"+c.ID] = nil
		}
	}
	if c.Origin.ParentID != "" {
		out["k"+c.Origin.ParentID+"\x00"+c.ID] = nil
	}
	if c.JobID != "" {
		out["j"+c.JobID+"\x00"+c.ID] = nil
	}
	if c.Running || c.Ask != nil {
		out["u\x00"+c.ID] = nil
	}
	return out
}

func convIndexOf(c conversation.Conversation) indexed { return indexed{entries: convEntries(c)} }

// indexConversation brings conversation id's index entries to now.
func indexConversation(tx *bolt.Tx, id []byte, now *indexed) error {
	_, _, err := reindex(tx.Bucket(bucketConvIndex), id, now)
	return err
}

// buildConvIndex indexes every conversation from scratch (a database from
// before the index).
func buildConvIndex(tx *bolt.Tx) error {
	if tx.Bucket(bucketConvIndex) != nil {
		if err := tx.DeleteBucket(bucketConvIndex); err != nil {
			return err
		}
	}
	idx, err := tx.CreateBucket(bucketConvIndex)
	if err != nil {
		return err
	}
	err = tx.Bucket(bucketConvs).ForEach(func(k, v []byte) error {
		c, err := decodeConversation(k, v)
		if err != nil {
			return nil // reported by whoever reads it
		}
		return putIndexed(idx, k, convIndexOf(c))
	})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyConvIndexed, []byte("1"))
}

// ChatPage is a page of the person's chats and the cursor of the next one
// ("" at the end).
type ChatPage struct {
	Conversations []conversation.Conversation
	Next          string
}

// Chats is a page of the person's chats (task chats left out), the most
// recently changed first, after cursor ("" for the first), at most limit
// (at least 1), whose titles hold every word of query.
func (b *Bolt) Chats(query, cursor string, limit int) (ChatPage, error) {
	limit = max(limit, 1)
	prefix := []byte("c")
	var after []byte
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !bytes.HasPrefix(raw, prefix) || len(raw) < len(prefix)+8 {
			return ChatPage{}, ErrBadCursor
		}
		after = raw
	}
	words := strings.Fields(strings.ToLower(query))
	p := ChatPage{Conversations: []conversation.Conversation{}}
	err := b.view(func(tx *bolt.Tx) error {
		convs := tx.Bucket(bucketConvs)
		cur := tx.Bucket(bucketConvIndex).Cursor()
		var k, v []byte
		if after != nil {
			k, v = cur.Seek(after)
			if bytes.Equal(k, after) {
				k, v = cur.Next()
			}
		} else {
			k, v = cur.Seek(prefix)
		}
		var last []byte
	next:
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
			for _, w := range words {
				if !bytes.Contains(v, []byte(w)) {
					continue next
				}
			}
			if len(p.Conversations) == limit {
				p.Next = base64.RawURLEncoding.EncodeToString(last)
				return nil
			}
			if len(k) < len(prefix)+8 {
				continue
			}
			id := k[len(prefix)+8:]
			raw := convs.Get(id)
			if raw == nil {
				continue // an index entry of a record gone bad
			}
			c, err := decodeConversation(id, raw)
			if err != nil {
				continue
			}
			p.Conversations = append(p.Conversations, c)
			last = append(last[:0], k...)
		}
		return nil
	})
	if err != nil {
		return ChatPage{}, fmt.Errorf("list chats: %w", err)
	}
	return p, nil
}

// TaskChatsOf are the chats of the tasks sent from chat parent.
func (b *Bolt) TaskChatsOf(parent string) ([]conversation.Conversation, error) {
	if parent == "" {
		return []conversation.Conversation{}, nil
	}
	return b.convsUnder("k" + parent + "\x00")
}

// ChatsInJob are the chats of a delegate's helpers.
func (b *Bolt) ChatsInJob(job string) ([]conversation.Conversation, error) {
	if job == "" {
		return []conversation.Conversation{}, nil
	}
	return b.convsUnder("j" + job + "\x00")
}

// UnsettledConversations are the conversations stored as replying or
// asking: at start-up, the ones a Conch that stopped left so.
func (b *Bolt) UnsettledConversations() ([]conversation.Conversation, error) {
	return b.convsUnder("u\x00")
}

// AskingChats are the person's chats waiting for an answer to a question.
func (b *Bolt) AskingChats() ([]conversation.Conversation, error) {
	return b.convsUnder("a\x00")
}

// convsUnder are the conversations under one of the index's id-ending
// prefixes.
func (b *Bolt) convsUnder(prefix string) ([]conversation.Conversation, error) {
	out, err := recordsUnder(b, bucketConvIndex, bucketConvs, prefix, decodeConversation)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}
