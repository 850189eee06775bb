package search_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"conch/backend/event"
	"conch/backend/search"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/testrig/seed"
)

// benchTasks is how many tasks the search benchmark's home holds (with
// seed's chats beside them): a year of heavy use.
func benchTasks() int {
	if n, err := strconv.Atoi(os.Getenv("CONCH_SEARCH_BENCH_TASKS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// BenchmarkSearch100k rebuilds the index of a seeded home (rebuild-s,
// index-MB beside store-MB), then answers searches: Conch's p99 (p99-ms)
// beside bleve's own term query on the same index (raw-p99-ms), and the
// time from a task's finish to it being found (searchable-ms).
func BenchmarkSearch100k(b *testing.B) {
	home := b.TempDir()
	if err := seed.Tasks(home, benchTasks(), time.Now()); err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	bus := event.NewBus()
	defer bus.Close()
	dir := filepath.Join(home, search.DirName)
	idx := search.New(search.Config{Dir: dir, Store: st, Bus: bus})
	began := time.Now()
	if err := idx.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer idx.Stop()
	for idx.Rebuilding() != nil {
		time.Sleep(50 * time.Millisecond)
	}
	rebuild := time.Since(began)
	queries := []string{"unit tests", "release", `"flaky test"`, "stripe webhook", "migrations #4242", "deploy staging", "changelog", "nothing-like-this"}
	b.ResetTimer()
	var ours, raw []time.Duration
	for i := 0; i < b.N; i++ {
		for _, q := range queries {
			t0 := time.Now()
			if _, err := idx.Search(search.Query{Q: q}); err != nil {
				b.Fatal(err)
			}
			ours = append(ours, time.Since(t0))
		}
	}
	b.StopTimer()
	searchable := toSearchable(b, bus, idx)
	raw = rawSearches(b, filepath.Join(dir, "index"), queries, b.N, idx)
	b.ReportMetric(p99(ours), "p99-ms")
	b.ReportMetric(p99(raw), "raw-p99-ms")
	b.ReportMetric(rebuild.Seconds(), "rebuild-s")
	b.ReportMetric(float64(size(dir))/1e6, "index-MB")
	b.ReportMetric(float64(size(filepath.Join(home, "conch.db")))/1e6, "store-MB")
	b.ReportMetric(searchable, "searchable-ms")
}

// rawSearches times bleve's own term query on the index's body field:
// what any search of it costs, without Conch's words, filters and snippets.
// The index is Conch's, so it is asked through a second handle only after
// Conch's is stopped; it is reopened after.
func rawSearches(b *testing.B, path string, queries []string, n int, idx *search.Index) []time.Duration {
	idx.Stop()
	raw, err := bleve.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	var out []time.Duration
	for i := 0; i < n; i++ {
		for _, q := range queries {
			t := query.NewTermQuery(firstWord(q))
			t.SetField("body")
			t0 := time.Now()
			if _, err := raw.Search(bleve.NewSearchRequest(t)); err != nil {
				b.Fatal(err)
			}
			out = append(out, time.Since(t0))
		}
	}
	return out
}

func firstWord(q string) string {
	for i, r := range q {
		if r == ' ' {
			return q[:i]
		}
	}
	return q
}

// toSearchable is the median time from a finished task's change on the
// bus to Search finding it, of ten.
func toSearchable(b *testing.B, bus *event.Bus, idx *search.Index) float64 {
	var took []time.Duration
	for i := 0; i < 10; i++ {
		word := fmt.Sprintf("zebra%dquokka", i)
		now := time.Now().UTC()
		t := task.Task{ID: store.NewID(), Kind: task.Background, Status: task.Done, Title: word, Text: "true",
			Mode: task.Auto, Cwd: "/", Provider: "shell", CreatedAt: now, EndedAt: &now}
		t0 := time.Now()
		bus.Publish(event.Event{Type: event.TaskChanged, Task: &t, Prev: task.Running})
		for {
			res, err := idx.Search(search.Query{Q: word})
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Hits) > 0 {
				break
			}
			if time.Since(t0) > 10*time.Second {
				b.Fatalf("%s not found after 10 s", word)
			}
			time.Sleep(2 * time.Millisecond)
		}
		took = append(took, time.Since(t0))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	return float64(took[len(took)/2].Microseconds()) / 1000
}

func p99(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[min(len(s)-1, len(s)*99/100)].Microseconds()) / 1000
}

func size(path string) int64 {
	var n int64
	_ = filepath.Walk(path, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
