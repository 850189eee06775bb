// Package search keeps a full-text index of every task and chat beside the
// store: titles, what was asked, every message, step and summary, and the
// end of each task's output log. It follows the event bus, so a write never
// waits on it, and it is rebuilt from the store in the background when it is
// missing, unreadable, of another schema or of another store (a restore),
// with its progress told, never blocking start-up or the API.
package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/blevesearch/bleve/v2"

	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/startstop"
	"conch/backend/task"
)

// Source is what the index reads from the store.
type Source interface {
	Tasks() ([]task.Task, error)
	Task(id string) (task.Task, error)
	Conversations() ([]conversation.Conversation, error)
	Conversation(id string) (conversation.Conversation, error)
	Messages(conversationID string, before uint64, limit int) ([]conversation.Message, bool, error)
}

// DirName is the index's folder in the home, beside the store.
const DirName = "search"

// Config wires an Index.
type Config struct {
	// Dir holds the index (<home>/search); it is made when missing.
	Dir   string
	Store Source
	// Logs are the tasks' output logs (nil: output is not indexed).
	Logs *output.Logs
	Bus  *event.Bus
	// Identity names the store the index was built from: an index made
	// of another is rebuilt. (A restore removes the index: it was of the
	// store the restore replaced.)
	Identity string
	Log      *slog.Logger
}

// Progress is how a rebuild stands.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Index is the search index. Start it after the store and the bus, before
// anything that writes; Stop it before the store closes.
type Index struct {
	cfg Config

	mu       sync.Mutex
	life     startstop.State
	idx      bleve.Index
	building *Progress // set while a rebuild runs
	stale    bool      // the follower fell behind: rebuild once the running one ends

	// touched holds, while a rebuild runs, the documents the follower
	// wrote since it began: newer than what the rebuild read, so the
	// rebuild leaves them be. tmu orders a rebuild's write after any
	// follower's mark it could miss.
	tmu     sync.Mutex
	touched map[string]bool

	// wrote is, of the documents the follower wrote lately, a hash of
	// each one's record (see put); seed is its hash's. Only the
	// follower's goroutine uses them.
	wrote map[string]uint64
	seed  maphash.Seed
}

// New returns an index; it opens nothing until Start.
func New(cfg Config) *Index {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Index{cfg: cfg, wrote: map[string]uint64{}, seed: maphash.MakeSeed()}
}

// meta is what the index records of itself.
type meta struct {
	Schema   int    `json:"schema"`
	Identity string `json:"identity"`
}

// Start opens the index, or makes a new one and rebuilds it from the store
// in the background, and follows the bus from now on.
func (x *Index) Start(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	ctx, err := x.life.Start(ctx)
	if err != nil {
		return fmt.Errorf("start search: %w", err)
	}
	idx, fresh, err := x.open()
	if err != nil {
		return fmt.Errorf("start search: %w", err)
	}
	x.idx = idx
	// Subscribed before the rebuild reads the store, so nothing written
	// meanwhile falls between the two.
	sub := x.cfg.Bus.Subscribe(followBuffer)
	x.life.WG.Add(1)
	go func() {
		defer x.life.WG.Done()
		x.follow(ctx, sub)
	}()
	if fresh {
		x.rebuildLocked(ctx)
	}
	return nil
}

// Stop ends following and any rebuild, and closes the index.
func (x *Index) Stop() {
	x.life.Stop(&x.mu, nil)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.idx != nil {
		_ = x.idx.Close()
		x.idx = nil
	}
}

// open opens the index in Dir, or makes a new one (fresh) when there is
// none, it cannot be read, or it is of another schema or store.
func (x *Index) open() (bleve.Index, bool, error) {
	path := filepath.Join(x.cfg.Dir, "index")
	metaPath := filepath.Join(x.cfg.Dir, "meta.json")
	want := meta{Schema: schema, Identity: x.cfg.Identity}
	var have meta
	b, err := os.ReadFile(metaPath)
	if err == nil && json.Unmarshal(b, &have) == nil && have == want {
		idx, err := bleve.Open(path)
		if err == nil {
			return idx, false, nil
		}
		x.cfg.Log.Warn("search index unreadable; rebuilding it", "err", err)
	}
	if err := os.RemoveAll(x.cfg.Dir); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(x.cfg.Dir, 0o700); err != nil {
		return nil, false, err
	}
	idx, err := bleve.New(path, newMapping())
	if err != nil {
		return nil, false, err
	}
	b, _ = json.Marshal(want)
	if err := os.WriteFile(metaPath, b, 0o600); err != nil {
		_ = idx.Close()
		return nil, false, err
	}
	return idx, true, nil
}

// Rebuilding is how a rebuild stands, or nil when none runs.
func (x *Index) Rebuilding() *Progress {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.building == nil {
		return nil
	}
	p := *x.building
	return &p
}

// index returns the open index, or an error when search is not running.
func (x *Index) index() (bleve.Index, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.idx == nil || !x.life.Open() {
		return nil, errClosed
	}
	return x.idx, nil
}

var errClosed = errors.New("search is not running (Conch is starting or closing)")
