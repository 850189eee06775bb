package store

import (
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
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

// BenchmarkPutTaskParallel has benchWriters goroutines call PutTask at once,
// as running tasks and chats do, with ids made as the app makes them
// (NewID); each call still waits for its fsync. It reports how many writes shared each commit and the 99th percentile of a
// write's wait (p99-ms).
func BenchmarkPutTaskParallel(b *testing.B) {
	s, _ := openTest(b)
	var n atomic.Int64
	start := s.commits.Load()
	var mu sync.Mutex
	var waits []time.Duration
	b.SetParallelism(max(1, benchWriters/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			n.Add(1)
			t := newTask(NewID(), epoch)
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
