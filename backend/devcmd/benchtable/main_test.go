package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkRawBoltCommit-2     	   10000	    250000 ns/op
BenchmarkPutTaskParallel-2   	  115705	     20000 ns/op	         3.353 p99-ms	        31.87 writes/commit
BenchmarkRawSpawn-2     	    4675	    800000 ns/op
BenchmarkShellTasks-2   	    2114	   1600000 ns/op
BenchmarkRawCommandToFile-2   	      18	 319911304 ns/op	 655.54 MB/s
BenchmarkShellTaskOutput-2    	      14	 369268260 ns/op	 567.92 MB/s
BenchmarkServe100k-2          	      21	  54835700 ns/op	         0.990 chats-ms	         1.827 page-ms	        18.41 rss-MB	         9.871 start-ms	 3371548 B/op	    3713 allocs/op
BenchmarkServeEmpty-2         	      91	  12085466 ns/op	         0.1531 chats-ms	         0.1726 page-ms	        12.25 rss-MB	         5.802 start-ms	  143806 B/op	    1470 allocs/op
BenchmarkRawOpenFirstPage-2   	   17767	     66378 ns/op	    1976 B/op	      32 allocs/op
BenchmarkAgentFirstRequest/claude-2         	       1	4153718540 ns/op	       466.5 direct-ms	       513.2 first-ms
BenchmarkAgentTaskMemory/1-2 	       1	1133574075 ns/op	         0.8920 mb-per-task
BenchmarkAgentTaskMemory/4-2 	       1	2352322534 ns/op	         0.3920 mb-per-task
BenchmarkAgentTaskMemory/8-2 	       1	4546606684 ns/op	         0.1415 mb-per-task
BenchmarkHostSend-2       	      20	   7289372 ns/op	         7.262 ms
BenchmarkRawSSHTrue-2     	      20	  12620591 ns/op	        12.57 ms
BenchmarkHostOutput-2     	       5	2481390169 ns/op	        50.12 p99-ms
PASS
`

func TestTheTableComparesEachFigureWithItsLimit(t *testing.T) {
	var echo bytes.Buffer
	r, rs, failed, err := read(strings.NewReader(sample), &echo)
	if err != nil || failed || echo.String() != sample {
		t.Fatalf("read: %v %v, echo %q", err, failed, echo.String())
	}
	table := render(rows(r, rs, parseFrames("ui-frames: p50 8.0 ms p95 12.5 ms max 40 ms over 600 frames (1.5% late) at 10000 tasks, 98 updates/s")))
	for _, want := range []string{
		"| state changes persisted (64 tasks at once, in a store of 20,000) | 50000 /s, p99 3.4 ms | 4000 /s (RawBoltCommit) | 12.50× | ≥ 10×, p99 < 10 ms |",
		"| shell tasks finished (`true`, auto, 3 sent and run at once) | 625 /s | 1250 /s (RawSpawn) | 0.50× | ≥ 0.5× |",
		"| output ingest, 200 MB from one task | 568 MB/s | 656 MB/s (RawCommandToFile) | 0.87× | ≥ 0.8× |",
		"| change → 100 WebSocket subscribers, p99 | did not run (BenchmarkFanOut100, BenchmarkRawFanOut100)",
		"| start-up to first full answer, 100,000 tasks | 9.9 ms | 5.8 ms (the same, no tasks); bbolt opening it and reading 100 records: 0.07 ms | 0.59× | < 300 ms |",
		"| GET /api/tasks first page, 100,000 tasks | 1.8 ms | 0.2 ms (the same, no tasks) | 0.09× | < 20 ms |",
		"| GET /api/conversations first page, 2,000 chats and 25,000 task chats | 1.0 ms | 0.2 ms (the same, no chats) | 0.15× | < 20 ms |",
		"| RSS of conch serve, 100,000 tasks | 18 MB | 12 MB (no tasks) | +6 MB | < 100 MB |",
		"| Send → Claude Code's first model request | 513.2 ms | 466.5 ms (the CLI started directly, same prompt, in turns with the sends) | 0.91× | ≥ 0.91× (adds ≤ 10%) |",
		"| Send → Codex's first model request | did not run (BenchmarkAgentFirstRequest/codex)",
		"| Conch's memory per running agent task (1, 4, 8 at once) | 0.9 · 0.4 · 0.1 MB | the conch process alone (each task's Claude Code not counted) |  | ≤ 5 MB each |",
		"| Send → first output of a command on a host (its runner up, over real ssh on loopback) | 7.3 ms | 12.6 ms (`ssh host true` on the same connection) | 1.73× | ≥ 0.67× (takes ≤ 1.5× as long) |",
		"| output of a task on a host to this computer's page (task.output and a read), p99 | did not run (BenchmarkHostOutput, BenchmarkRawSSHOutput)",
		"| UI p95 frame time, 10000 tasks, 98 updates/s | 12.5 ms (1.5% of frames late) | 16.7 ms (one frame at 60 Hz) | 1.34× | ≤ 16.7 ms |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestAFailedBenchmarkIsSaid(t *testing.T) {
	_, _, failed, _ := read(strings.NewReader("--- FAIL: BenchmarkShellTasks\nFAIL\tconch/backend/provider/shell\n"), &bytes.Buffer{})
	if !failed {
		t.Fatal("a failure went unnoticed")
	}
}

// scripts/bench runs every benchmark once a round. A row is the round
// whose ratio is the median of the rounds': its figures, p99 included, are
// that round's, each beside the limit measured in the same round, so one
// slow moment of the machine makes neither the figure nor its limit.
func TestARowIsItsMedianRound(t *testing.T) {
	runs := `BenchmarkRawBoltCommit-2     	   10000	    250000 ns/op
BenchmarkPutTaskParallel-2   	  115705	     20000 ns/op	         3.0 p99-ms
BenchmarkRawBoltCommit-2     	   10000	    900000 ns/op
BenchmarkPutTaskParallel-2   	  115705	     21000 ns/op	         9.0 p99-ms
BenchmarkRawBoltCommit-2     	   10000	    260000 ns/op
BenchmarkPutTaskParallel-2   	  115705	     90000 ns/op	         4.0 p99-ms
`
	r, rs, _, err := read(strings.NewReader(runs), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if raw, ours := r["BenchmarkRawBoltCommit"]["ns/op"], r["BenchmarkPutTaskParallel"]; raw != 260000 || ours["ns/op"] != 21000 || ours["p99-ms"] != 4.0 {
		t.Fatalf("medians: raw %v, ours %v", raw, ours)
	}
	// The rounds' ratios are 12.5, 42.9 and 2.9: the first round is the median.
	want := "| state changes persisted (64 tasks at once, in a store of 20,000) | 50000 /s, p99 3.0 ms | 4000 /s (RawBoltCommit) | 12.50× |"
	if table := render(rows(r, rs, nil)); !strings.Contains(table, want) {
		t.Fatalf("table lacks %q:\n%s", want, table)
	}
	// Runs that do not pair up give the medians.
	r, rs, _, _ = read(strings.NewReader(runs+"BenchmarkRawBoltCommit-2     	   10000	    100000 ns/op\n"), io.Discard)
	want = "| state changes persisted (64 tasks at once, in a store of 20,000) | 47619 /s, p99 4.0 ms | 3846 /s (RawBoltCommit) | 12.38× |"
	if table := render(rows(r, rs, nil)); !strings.Contains(table, want) {
		t.Fatalf("table lacks %q:\n%s", want, table)
	}
}

// Three UI runs give the middle one, by late frames and then by p95; a
// line that is not a run's is skipped.
func TestTheUIRowIsTheMedianRun(t *testing.T) {
	ui := parseFrames(`ui-frames: p50 16.7 ms p95 33.3 ms max 50 ms over 560 frames (8.2% late) at 10000 tasks, 98 updates/s
  (249 tasks sent in 10.1 s)
ui-frames: p50 16.7 ms p95 16.8 ms max 50 ms over 598 frames (1.3% late) at 10000 tasks, 97 updates/s
ui-frames: p50 16.7 ms p95 16.8 ms max 33 ms over 582 frames (3.4% late) at 10000 tasks, 99 updates/s
`)
	if ui == nil || ui.p95 != 16.8 || ui.late != 3.4 || ui.updates != 99 || ui.runs != 3 {
		t.Fatalf("median run: %+v", ui)
	}
	table := render(rows(map[string]result{}, rounds{}, ui))
	if want := "| UI p95 frame time, 10000 tasks, 99 updates/s | 16.8 ms (3.4% of frames late; the median of 3 runs) |"; !strings.Contains(table, want) {
		t.Fatalf("table lacks %q:\n%s", want, table)
	}
	// Each run's still page is its limit: the median run's is the row's.
	// The runs with every task loaded give the middle one of theirs, with
	// the limit of its own run.
	ui = parseFrames(`ui-frames: p50 16.7 ms p95 33.3 ms max 50 ms over 560 frames (8.2% late) at 10000 tasks, 98 updates/s
ui-frames-all: p50 16.7 ms p95 33.3 ms max 50 ms over 560 frames (5.0% late) at 10000 tasks, all loaded, 98 updates/s
ui-frames-limit: p50 16.7 ms p95 33.3 ms max 50 ms over 580 frames (6.0% late) on a still page of 10000 rows under the same load
ui-frames: p50 16.7 ms p95 16.8 ms max 50 ms over 598 frames (1.3% late) at 10000 tasks, 97 updates/s
ui-frames-all: p50 16.7 ms p95 50.0 ms max 80 ms over 400 frames (30.0% late) at 10000 tasks, all loaded, 97 updates/s
ui-frames-limit: p50 16.7 ms p95 16.7 ms max 16.8 ms over 601 frames (0.0% late) on a still page of 10000 rows under the same load
ui-frames: p50 16.7 ms p95 16.8 ms max 33 ms over 582 frames (3.4% late) at 10000 tasks, 99 updates/s
ui-frames-all: p50 16.7 ms p95 16.8 ms max 33 ms over 590 frames (1.0% late) at 10000 tasks, all loaded, 99 updates/s
ui-frames-limit: p50 16.7 ms p95 16.7 ms max 33.4 ms over 600 frames (0.2% late) on a still page of 10000 rows under the same load
`)
	table = render(rows(map[string]result{}, rounds{}, ui))
	for _, want := range []string{
		"| UI p95 frame time, 10000 tasks, 99 updates/s | 16.8 ms (3.4% of frames late; the median of 3 runs) | 16.7 ms (a still page of as many rows, the same load: 0.2% of frames late) | 0.99× | ≤ 16.7 ms |",
		"| UI p95 frame time, 10000 tasks all loaded (scrolled to the end), same load | 33.3 ms (5.0% of frames late; the median of 3 runs) | 33.3 ms (a still page of as many rows, the same load: 6.0% of frames late) | 1.00× | ≤ 16.7 ms |",
	} {
		if !strings.Contains(table, want) {
			t.Fatalf("table lacks %q:\n%s", want, table)
		}
	}
	if parseFrames("no run here\n") != nil {
		t.Fatal("a file without a run gave one")
	}
}
