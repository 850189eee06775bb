package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"conch/backend/task"
)

// bucketTurns holds the replies of the person's chats, newest first:
// <ended, inverted, 8 bytes> <conversation id> → Turn.
var bucketTurns = []byte("turns")

// Turn is one reply of a chat that nobody else ran it for (a task's turns
// are its task's), as Activity shows it.
type Turn struct {
	Conversation string    `json:"conversation"`
	Provider     string    `json:"provider"`
	Model        string    `json:"model,omitempty"`
	StartedAt    time.Time `json:"startedAt"`
	EndedAt      time.Time `json:"endedAt"`
	// Outcome is done, failed or stopped; Notice says why when not done.
	Outcome string  `json:"outcome"`
	Notice  string  `json:"notice,omitempty"`
	Spent   float64 `json:"spent"`
}

func turnKey(t Turn) []byte {
	k := binary.BigEndian.AppendUint64(nil, math.MaxUint64-nanos(t.EndedAt))
	return append(k, t.Conversation...)
}

// PutTurn records a turn, durably.
func (b *Bolt) PutTurn(t Turn) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("put turn: %w", err)
	}
	if err := b.submit(op{bucket: bucketTurns, key: turnKey(t), value: raw}); err != nil {
		return fmt.Errorf("put turn: %w", err)
	}
	return nil
}

// TurnsBefore are up to limit turns that ended before before (zero: the
// newest), the newest first.
func (b *Bolt) TurnsBefore(before time.Time, limit int) ([]Turn, error) {
	var out []Turn
	err := b.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketTurns).Cursor()
		k, v := c.First()
		if !before.IsZero() {
			// The first key after every turn that ended at before or later.
			k, v = c.Seek(binary.BigEndian.AppendUint64(nil, math.MaxUint64-nanos(before)+1))
		}
		for ; k != nil && len(out) < limit; k, v = c.Next() {
			var t Turn
			if json.Unmarshal(v, &t) != nil {
				continue // a record gone bad is left out
			}
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read turns: %w", err)
	}
	return out, nil
}

// FinishedTasksBefore are up to limit finished tasks that ended before
// before (zero: the newest), the most recently ended first.
func (b *Bolt) FinishedTasksBefore(before time.Time, limit int) ([]task.Task, error) {
	prefix := []byte("g" + string(GroupFinished) + "\x00")
	var out []task.Task
	err := b.view(func(tx *bolt.Tx) error {
		tasks := tx.Bucket(bucketTasks)
		c := tx.Bucket(bucketTaskIndex).Cursor()
		from := prefix
		if !before.IsZero() {
			from = binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), math.MaxUint64-nanos(before)+1)
		}
		for k, _ := c.Seek(from); k != nil && len(out) < limit && len(k) > len(prefix)+8 && string(k[:len(prefix)]) == string(prefix); k, _ = c.Next() {
			id := k[len(prefix)+8:]
			raw := tasks.Get(id)
			if raw == nil {
				continue
			}
			t, err := decodeTask(id, raw)
			if err != nil {
				continue
			}
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read finished tasks: %w", err)
	}
	return out, nil
}
