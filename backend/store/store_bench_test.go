package store

import (
	"fmt"
	"path/filepath"
	"strconv"
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

// BenchmarkPutTaskParallel has many goroutines call PutTask at once, as
// running tasks and chats do; each call still waits for its fsync. It runs
// 8 goroutines per CPU so that there are writers to group even on a small
// machine, and reports how many writes shared each commit.
func BenchmarkPutTaskParallel(b *testing.B) {
	s, _ := openTest(b)
	var n atomic.Int64
	start := s.commits.Load()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t := newTask(fmt.Sprintf("t%09d", n.Add(1)), epoch)
			if err := s.PutTask(t); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if c := s.commits.Load() - start; c > 0 {
		b.ReportMetric(float64(n.Load())/float64(c), "writes/commit")
	}
}
