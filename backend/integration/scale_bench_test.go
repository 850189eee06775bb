package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"conch/backend/service"
	"conch/backend/testrig/seed"
)

// scaleTasks is how many finished tasks the scale benchmarks' home holds
// (with a chat for every fourth, and one of the person's per
// seed.ChatsPer).
const scaleTasks = 100_000

var (
	seedOnce sync.Once
	seedHome string
	seedErr  error
)

// seededHome is a home holding scaleTasks finished tasks, made once per
// run through the store (never the API).
func seededHome(b *testing.B) string {
	seedOnce.Do(func() {
		seedHome, seedErr = os.MkdirTemp("", "conch-scale-")
		if seedErr == nil {
			seedErr = seed.Tasks(seedHome, scaleTasks, time.Now())
		}
	})
	if seedErr != nil {
		b.Fatal(seedErr)
	}
	return seedHome
}

// removeSeeded removes the seeded home, if a benchmark made one.
func removeSeeded() {
	if seedHome != "" {
		_ = os.RemoveAll(seedHome)
	}
}

// serveAndMeasure starts `conch serve` on home b.N times and reports, from
// the process's start, how long until its first full answer to GET
// /api/tasks (start-ms), then the median answer of the first page
// (page-ms), of the chat list's first page (chats-ms), and the server's
// resident memory after them (rss-MB).
func serveAndMeasure(b *testing.B, home string) {
	var starts, pages, chats []time.Duration
	var rss []float64
	for b.Loop() {
		began := time.Now()
		s := start(b, home)
		var l service.TaskList
		if code := s.call(b, "GET", "/api/tasks", "", &l); code != 200 {
			b.Fatalf("first page: %d", code)
		}
		starts = append(starts, time.Since(began))
		for range 20 {
			t0 := time.Now()
			if code := s.call(b, "GET", "/api/tasks", "", nil); code != 200 {
				b.Fatalf("page: %d", code)
			}
			pages = append(pages, time.Since(t0))
			t0 = time.Now()
			if code := s.call(b, "GET", "/api/conversations", "", nil); code != 200 {
				b.Fatalf("chat list: %d", code)
			}
			chats = append(chats, time.Since(t0))
		}
		rss = append(rss, rssMB(b, s.cmd.Process.Pid))
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		_ = s.cmd.Wait()
	}
	b.StopTimer()
	slices.Sort(starts)
	slices.Sort(pages)
	slices.Sort(rss)
	slices.Sort(chats)
	b.ReportMetric(ms(starts[len(starts)/2]), "start-ms")
	b.ReportMetric(ms(pages[len(pages)/2]), "page-ms")
	b.ReportMetric(ms(chats[len(chats)/2]), "chats-ms")
	b.ReportMetric(rss[len(rss)-1], "rss-MB")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rssMB is a process's resident memory (VmRSS), in MB.
func rssMB(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Skip("no /proc: resident memory is read from it")
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1000
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkServe100k is `conch serve` on a home with 100,000 finished
// tasks, 25,000 task chats and 2,000 of the person's: start-up to the
// first full answer, the first pages, memory.
func BenchmarkServe100k(b *testing.B) { serveAndMeasure(b, seededHome(b)) }

// BenchmarkServeEmpty is the same on an empty home: what start-up and
// memory cost with no tasks at all.
func BenchmarkServeEmpty(b *testing.B) { serveAndMeasure(b, b.TempDir()) }

// BenchmarkRawOpenFirstPage is the limit of BenchmarkServe100k's first
// answer: bbolt opening the same file and reading 100 task records.
func BenchmarkRawOpenFirstPage(b *testing.B) {
	path := filepath.Join(seededHome(b), "conch.db")
	for b.Loop() {
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		err = db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket([]byte("tasks")).Cursor()
			for k, v := c.First(); k != nil && n < 100; k, v = c.Next() {
				n += min(1, len(v))
			}
			return nil
		})
		if err != nil || n != 100 {
			b.Fatalf("read %d records: %v", n, err)
		}
		_ = db.Close()
	}
}
