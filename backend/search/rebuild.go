package search

import (
	"context"

	"github.com/blevesearch/bleve/v2"
)

// rebuild indexes everything the store holds again, in the background; a
// rebuild asked for while one runs follows it.
func (x *Index) rebuild(ctx context.Context) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.rebuildLocked(ctx)
}

func (x *Index) rebuildLocked(ctx context.Context) {
	if !x.life.Open() {
		return
	}
	if x.building != nil {
		x.stale = true
		return
	}
	x.building = &Progress{}
	x.life.WG.Add(1)
	go func() {
		defer x.life.WG.Done()
		for {
			if err := x.build(ctx); err != nil && ctx.Err() == nil {
				x.cfg.Log.Warn("rebuild the search index", "err", err)
			}
			x.mu.Lock()
			again := x.stale && ctx.Err() == nil
			x.stale = false
			if !again {
				x.building = nil
				x.mu.Unlock()
				return
			}
			x.building = &Progress{}
			x.mu.Unlock()
		}
	}()
}

// rebuildBatch is how many documents one write of a rebuild holds.
const rebuildBatch = 1000

// rebuilt is a rebuild's documents not written yet.
type rebuilt struct {
	x    *Index
	idx  bleve.Index
	ids  []string
	recs []record
}

func (r *rebuilt) add(id string, rec record) {
	r.ids = append(r.ids, id)
	r.recs = append(r.recs, rec)
}

// flush writes what the rebuild read, but not over what the follower
// wrote since the rebuild began: that is newer.
func (r *rebuilt) flush() error {
	r.x.tmu.Lock()
	defer r.x.tmu.Unlock()
	b := r.idx.NewBatch()
	for i, id := range r.ids {
		if !r.x.touched[id] {
			_ = b.Index(id, r.recs[i])
		}
	}
	r.ids, r.recs = r.ids[:0], r.recs[:0]
	return r.idx.Batch(b)
}

// build indexes every chat with its messages and every task with its
// output, counting its progress.
func (x *Index) build(ctx context.Context) error {
	idx, err := x.index()
	if err != nil {
		return err
	}
	x.tmu.Lock()
	x.touched = map[string]bool{}
	x.tmu.Unlock()
	defer func() {
		x.tmu.Lock()
		x.touched = nil
		x.tmu.Unlock()
	}()
	cs, err := x.cfg.Store.Conversations()
	if err != nil {
		return err
	}
	ts, err := x.cfg.Store.Tasks()
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.building.Total = len(cs) + len(ts)
	x.mu.Unlock()
	r := &rebuilt{x: x, idx: idx}
	step := func() error {
		x.mu.Lock()
		x.building.Done++
		x.mu.Unlock()
		if len(r.ids) >= rebuildBatch {
			if err := r.flush(); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	for _, c := range cs {
		r.add(chatID(c.ID), chatRecord(c))
		msgs, _, err := x.cfg.Store.Messages(c.ID, 0, 0)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if rec, ok := messageRecord(c, m); ok {
				r.add(messageID(c.ID, m.Seq), rec)
			}
		}
		if err := step(); err != nil {
			return err
		}
	}
	for _, t := range ts {
		r.add(taskID(t.ID), taskRecord(t))
		if t.Status.Finished() {
			if out := x.outputOf(t); len(out) > 0 {
				r.add(outputID(t.ID), outputRecord(t, out))
			}
		}
		if err := step(); err != nil {
			return err
		}
	}
	return r.flush()
}
