package store

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"conch/backend/task"
)

// BenchmarkRawBoltCommit is the physical limit of one writer: one key per
// fsync'd db.Update. BenchmarkPutTaskParallel is measured against it.
func BenchmarkRawBoltCommit(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketTasks)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	v := []byte(`{"id":"x","status":"queued"}`)
	for i := 0; b.Loop(); i++ {
		err := db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketTasks).Put([]byte(strconv.Itoa(i)), v)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchWriters is how many tasks change at once in
// BenchmarkPutTaskParallel: a busy Conch (every background and helper slot
// taken, and their chats).
const benchWriters = 64

// benchStored is how many finished tasks the store holds before
// BenchmarkPutTaskParallel's writers start: a year of heavy use, so each
// change lands in a tree of that depth and width.
const benchStored = 20_000

// BenchmarkPutTaskParallel has benchWriters goroutines change tasks at once
// through PutTask, as running tasks do: each sends a new task (queued),
// starts it (running), records two of its steps and ends it (done), then the
// next, with ids made as the app makes them (NewID), in a store that already
// holds benchStored finished tasks. Each call still waits for its fsync. One
// op is one change. It reports how many changes shared each commit and the
// 99th percentile of a change's wait (p99-ms).
func BenchmarkPutTaskParallel(b *testing.B) {
	s, _ := openTest(b)
	seedFinished(b, s, benchStored)
	var n atomic.Int64
	start := s.commits.Load()
	var mu sync.Mutex
	var waits []time.Duration
	b.SetParallelism(max(1, benchWriters/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		var t task.Task
		for step := 0; pb.Next(); step++ {
			n.Add(1)
			switch step % 5 {
			case 0:
				t = newTask(NewID(), time.Now())
			case 1:
				t.Status, t.Rev = task.Running, t.Rev+1
			case 2, 3:
				t.Steps, t.Rev = append(t.Steps, fmt.Sprintf("step %d", step%5-1)), t.Rev+1
			case 4:
				ended := time.Now()
				t.Status, t.Rev, t.EndedAt = task.Done, t.Rev+1, &ended
			}
			began := time.Now()
			if err := s.PutTask(t); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(began))
		}
		mu.Lock()
		waits = append(waits, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	if c := s.commits.Load() - start; c > 0 {
		b.ReportMetric(float64(n.Load())/float64(c), "writes/commit")
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		b.ReportMetric(float64(waits[len(waits)*99/100])/float64(time.Millisecond), "p99-ms")
	}
}

// seedFinished stores n finished tasks in batches, made a minute apart.
func seedFinished(b *testing.B, s *Bolt, n int) {
	b.Helper()
	at := time.Now().Add(-time.Duration(n) * time.Minute)
	batch := make([]task.Task, 0, 1000)
	for i := range n {
		t := newTask(NewID(), at.Add(time.Duration(i)*time.Minute))
		ended := t.CreatedAt.Add(time.Second)
		t.Status, t.EndedAt = task.Done, &ended
		batch = append(batch, t)
		if len(batch) == cap(batch) || i == n-1 {
			if err := s.PutTasks(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}
