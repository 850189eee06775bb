// Command benchtable reads `go test -bench` output on stdin, passes it
// through, and then prints one table of Conch's figures against the
// limits measured in the same run (scripts/bench, `make bench`):
//
//	go test -run '^$' -bench . ./... | go run ./backend/internal/benchtable -frames F -out build/bench.txt
//
// A row whose benchmarks did not run says so; the table never makes a
// figure up. It exits non-zero when a benchmark failed or none ran.
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	frames := flag.String("frames", "", "the UI frame-time lines (frontend/e2e/frames.mjs), one a run, if it ran")
	out := flag.String("out", "", "also write the table here")
	flag.Parse()
	results, failed, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	var ui *frameLine
	if *frames != "" {
		if b, err := os.ReadFile(*frames); err == nil {
			ui = parseFrames(string(b))
		}
	}
	table := render(rows(results, ui))
	fmt.Print("\n" + table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	if failed || len(results) == 0 {
		os.Exit(1)
	}
}

// result is one benchmark's figures: ns/op and its reported metrics.
type result map[string]float64

var benchLine = regexp.MustCompile(`^(Benchmark[^\s]+?)(-\d+)?\s+\d+\s+(.*)$`)

// read passes in to echo and collects every benchmark's figures, each the
// median of its runs (go test -count N runs each N times, so one slow
// moment of the machine does not make the row); failed says a benchmark or
// package failed.
func read(in io.Reader, echo io.Writer) (map[string]result, bool, error) {
	out := map[string]result{}
	runs := map[string]map[string][]float64{}
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(echo, line)
		if strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "panic:") {
			failed = true
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			if runs[m[1]] == nil {
				runs[m[1]] = map[string][]float64{}
			}
			runs[m[1]][f[i+1]] = append(runs[m[1]][f[i+1]], v)
		}
	}
	for name, metrics := range runs {
		r := result{}
		for metric, vs := range metrics {
			slices.Sort(vs)
			r[metric] = vs[len(vs)/2]
		}
		out[name] = r
	}
	return out, failed, sc.Err()
}

// frameLine is the UI frame-time run's figures.
type frameLine struct {
	p95, updates float64
	tasks        int
	// late is the share of frames that missed the next refresh, in
	// percent (-1 when the line does not say).
	late float64
	// runs is how many runs the figures are the median of.
	runs int
}

var framesRe = regexp.MustCompile(`p95 ([\d.]+) ms.* at (\d+) tasks, ([\d.]+) updates/s`)

// parseFrames reads one line a run and answers the median run, ordered by
// the share of late frames (finer than p95, which lands on whole frames)
// and then by p95, as the Go figures are the median of their runs.
func parseFrames(s string) *frameLine {
	var runs []frameLine
	for line := range strings.SplitSeq(s, "\n") {
		m := framesRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		p95, _ := strconv.ParseFloat(m[1], 64)
		n, _ := strconv.Atoi(m[2])
		u, _ := strconv.ParseFloat(m[3], 64)
		late := -1.0
		if l := lateRe.FindStringSubmatch(line); l != nil {
			late, _ = strconv.ParseFloat(l[1], 64)
		}
		runs = append(runs, frameLine{p95: p95, tasks: n, updates: u, late: late})
	}
	if len(runs) == 0 {
		return nil
	}
	slices.SortStableFunc(runs, func(a, b frameLine) int {
		return cmp.Or(cmp.Compare(a.late, b.late), cmp.Compare(a.p95, b.p95))
	})
	mid := runs[(len(runs)-1)/2]
	mid.runs = len(runs)
	return &mid
}

var lateRe = regexp.MustCompile(`\(([\d.]+)% late\)`)

// row is one line of the table.
type row struct {
	what, conch, limit, ratio, goal string
}

func rows(r map[string]result, ui *frameLine) []row {
	get := func(name, metric string) (float64, bool) {
		res, ok := r[name]
		if !ok {
			return 0, false
		}
		v, ok := res[metric]
		return v, ok
	}
	var out []row
	missing := func(what, goal string, names ...string) row {
		return row{what, "did not run (" + strings.Join(names, ", ") + ")", "", "", goal}
	}
	// rate compares two benchmarks' operations per second.
	rate := func(what, unit, ours, raw, goal string, per float64) row {
		o, ok1 := get(ours, "ns/op")
		w, ok2 := get(raw, "ns/op")
		if !ok1 || !ok2 {
			return missing(what, goal, ours, raw)
		}
		return row{what, fmt.Sprintf("%.0f %s", per*1e9/o, unit), fmt.Sprintf("%.0f %s (%s)", per*1e9/w, unit, strings.TrimPrefix(raw, "Benchmark")),
			fmt.Sprintf("%.2f×", w/o), goal}
	}
	store := rate("state changes persisted (64 at once)", "/s", "BenchmarkPutTaskParallel", "BenchmarkRawBoltCommit", "≥ 10×, p99 < 10 ms", 1)
	if p99, ok := get("BenchmarkPutTaskParallel", "p99-ms"); ok {
		store.conch += fmt.Sprintf(", p99 %.1f ms", p99)
	}
	out = append(out, store,
		rate("shell tasks finished (`true`, auto, 3 sent and run at once)", "/s", "BenchmarkShellTasks", "BenchmarkRawSpawn", "≥ 0.5×", 1))
	mb := func(what, ours, raw, goal string) row {
		o, ok1 := get(ours, "MB/s")
		w, ok2 := get(raw, "MB/s")
		if !ok1 || !ok2 {
			return missing(what, goal, ours, raw)
		}
		return row{what, fmt.Sprintf("%.0f MB/s", o), fmt.Sprintf("%.0f MB/s (%s)", w, strings.TrimPrefix(raw, "Benchmark")), fmt.Sprintf("%.2f×", o/w), goal}
	}
	out = append(out,
		mb("output ingest, 200 MB from one task", "BenchmarkShellTaskOutput", "BenchmarkRawCommandToFile", "≥ 0.8×"),
		mb("output writer, 64 KiB writes", "BenchmarkWriterWrite", "BenchmarkRawFileWrite", ""))
	// latency compares a metric in milliseconds (lower is better).
	latency := func(what, ours, om, raw, rm, goal, rawWhat string) row {
		o, ok1 := get(ours, om)
		w, ok2 := get(raw, rm)
		if !ok1 || !ok2 {
			return missing(what, goal, ours, raw)
		}
		return row{what, fmt.Sprintf("%.1f ms", o), fmt.Sprintf("%.1f ms (%s)", w, rawWhat), fmt.Sprintf("%.2f×", w/o), goal}
	}
	out = append(out,
		latency("change → 100 WebSocket subscribers, p99", "BenchmarkFanOut100", "p99-ms", "BenchmarkRawFanOut100", "p99-ms", "", "the same bytes to 100 TCP sockets"))
	start := latency("start-up to first full answer, 100,000 tasks", "BenchmarkServe100k", "start-ms", "BenchmarkServeEmpty", "start-ms", "< 300 ms", "the same, no tasks")
	if raw, ok := get("BenchmarkRawOpenFirstPage", "ns/op"); ok && start.limit != "" {
		start.limit += fmt.Sprintf("; bbolt opening it and reading 100 records: %.2f ms", raw/1e6)
	}
	out = append(out, start)
	out = append(out,
		latency("GET /api/tasks first page, 100,000 tasks", "BenchmarkServe100k", "page-ms", "BenchmarkServeEmpty", "page-ms", "< 20 ms", "the same, no tasks"),
		latency("GET /api/conversations first page, 2,000 chats and 25,000 task chats", "BenchmarkServe100k", "chats-ms", "BenchmarkServeEmpty", "chats-ms", "< 20 ms", "the same, no chats"))
	if o, ok := get("BenchmarkServe100k", "rss-MB"); ok {
		w, _ := get("BenchmarkServeEmpty", "rss-MB")
		out = append(out, row{"RSS of conch serve, 100,000 tasks", fmt.Sprintf("%.0f MB", o), fmt.Sprintf("%.0f MB (no tasks)", w), fmt.Sprintf("+%.0f MB", o-w), "< 100 MB"})
	} else {
		out = append(out, missing("RSS of conch serve, 100,000 tasks", "< 100 MB", "BenchmarkServe100k"))
	}
	if ui != nil {
		figure := fmt.Sprintf("%.1f ms", ui.p95)
		var notes []string
		if ui.late >= 0 {
			notes = append(notes, fmt.Sprintf("%.1f%% of frames late", ui.late))
		}
		if ui.runs > 1 {
			notes = append(notes, fmt.Sprintf("the median of %d runs", ui.runs))
		}
		if len(notes) > 0 {
			figure += " (" + strings.Join(notes, "; ") + ")"
		}
		out = append(out, row{fmt.Sprintf("UI p95 frame time, %d tasks, %.0f updates/s", ui.tasks, ui.updates), figure,
			"16.7 ms (one frame at 60 Hz)", fmt.Sprintf("%.2f×", 16.7/ui.p95), "≤ 16.7 ms"})
	} else {
		out = append(out, row{"UI p95 frame time, 10,000 tasks, 100 updates/s", "did not run (npm --prefix frontend run frames)", "", "", "≤ 16.7 ms"})
	}
	return out
}

// render lays the rows out as a Markdown table.
func render(rs []row) string {
	var b strings.Builder
	b.WriteString("| measured | Conch | limit, same run | ratio | goal |\n|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.what, r.conch, r.limit, r.ratio, r.goal)
	}
	return b.String()
}
