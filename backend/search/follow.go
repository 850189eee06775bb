package search

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"conch/backend/event"
	"conch/backend/task"
)

// followBuffer is how many events the follower may fall behind by before
// the bus drops it (it then rebuilds, so nothing is missed).
const followBuffer = 4096

// flushEvery bounds how long a change waits in a batch; flushAt how many
// changes a batch holds before it is written at once.
const (
	flushEvery = 100 * time.Millisecond
	flushAt    = 512
)

// wroteMax bounds how many documents the follower remembers writing
// (Index.wrote): past it, it forgets them all and starts again.
const wroteMax = 4096

// follow indexes what the bus says changed, a batch at a time, until ctx
// ends. Dropped for falling behind, it subscribes again and rebuilds.
func (x *Index) follow(ctx context.Context, sub *event.Subscription) {
	idx, err := x.index()
	if err != nil {
		sub.Close()
		return
	}
	b := idx.NewBatch()
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	flush := func() {
		if b.Size() == 0 {
			return
		}
		if err := idx.Batch(b); err != nil {
			x.cfg.Log.Warn("write the search index", "err", err)
			clear(x.wrote) // not written after all
		}
		b.Reset()
	}
	defer func() { flush(); sub.Close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			flush()
		case <-sub.Done():
			flush()
			if ctx.Err() != nil || x.cfg.Bus.Closed() {
				return
			}
			sub = x.cfg.Bus.Subscribe(followBuffer)
			clear(x.wrote)
			x.rebuild(ctx)
		case ev := <-sub.C():
			x.take(idx, b, ev)
			if b.Size() >= flushAt {
				flush()
			}
		}
	}
}

// take adds one event's change to the batch.
func (x *Index) take(idx bleve.Index, b *bleve.Batch, ev event.Event) {
	switch ev.Type {
	case event.TaskChanged:
		if ev.Task == nil {
			return
		}
		t := *ev.Task
		x.put(b, taskID(t.ID), taskRecord(t))
		if t.Status.Finished() && !ev.Prev.Finished() {
			x.indexOutput(b, t)
		}
	case event.TaskDeleted:
		x.forgetTask(idx, b, ev.ID)
	case event.ConversationChanged:
		if ev.Conversation != nil {
			x.put(b, chatID(ev.Conversation.ID), chatRecord(*ev.Conversation))
		}
	case event.MessageAdded:
		m := ev.Message
		if m == nil {
			return
		}
		c, err := x.cfg.Store.Conversation(m.ConversationID)
		if err != nil {
			return
		}
		if r, ok := messageRecord(c, *m); ok {
			x.put(b, messageID(c.ID, m.Seq), r)
		}
	}
}

// indexOutput adds the end of a finished task's output log.
func (x *Index) indexOutput(b *bleve.Batch, t task.Task) {
	out := x.outputOf(t)
	if len(out) == 0 {
		return
	}
	x.put(b, outputID(t.ID), outputRecord(t, out))
}

// outputOf is the end of a finished task's output log, or nil.
func (x *Index) outputOf(t task.Task) []byte {
	if x.cfg.Logs == nil {
		return nil
	}
	size, err := x.cfg.Logs.Size(t.ID)
	if err != nil || size == 0 {
		return nil
	}
	out, _, err := x.cfg.Logs.ReadAt(t.ID, max(size-maxOutput, 0), maxOutput)
	if err != nil {
		return nil
	}
	return out
}

// put adds a document to the follower's batch (rec nil: removes it),
// marking it newer than what a running rebuild read. A document the
// follower last wrote just as rec is left as it is: most changes to a
// task (its output growing, its current step, its notification noted)
// leave what is searched of it unchanged, and each write costs the index
// a deletion to merge away.
func (x *Index) put(b *bleve.Batch, id string, rec any) {
	if x.unchanged(id, rec) {
		return
	}
	x.tmu.Lock()
	if x.touched != nil {
		x.touched[id] = true
	}
	x.tmu.Unlock()
	if rec == nil {
		b.Delete(id)
		return
	}
	_ = b.Index(id, rec)
}

// forgetTask removes a deleted task: its record, its output and what its
// chat said.
func (x *Index) forgetTask(idx bleve.Index, b *bleve.Batch, id string) {
	x.put(b, taskID(id), nil)
	x.put(b, outputID(id), nil)
	q := query.NewTermQuery(id)
	q.SetField("task")
	for from := 0; ; from += 1000 {
		req := bleve.NewSearchRequestOptions(q, 1000, from, false)
		res, err := idx.Search(req)
		if err != nil || len(res.Hits) == 0 {
			return
		}
		for _, h := range res.Hits {
			x.put(b, h.ID, nil)
		}
		if len(res.Hits) < 1000 {
			return
		}
	}
}

// unchanged says whether the follower's last write of id was rec, and
// notes rec as its last write.
func (x *Index) unchanged(id string, rec any) bool {
	if rec == nil {
		delete(x.wrote, id)
		return false
	}
	j, err := json.Marshal(rec)
	if err != nil {
		return false
	}
	sum := maphash.Bytes(x.seed, j)
	if last, ok := x.wrote[id]; ok && last == sum {
		return true
	}
	if len(x.wrote) >= wroteMax {
		clear(x.wrote)
	}
	x.wrote[id] = sum
	return false
}
