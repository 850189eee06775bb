// Command benchtable reads `go test -bench` output on stdin, passes it
// through, and then prints one table of Conch's figures against the
// limits measured in the same run (scripts/bench, `make bench`):
//
//	go test -run '^$' -bench . ./... | go run ./backend/devcmd/benchtable -frames F -out build/bench.txt
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
	frames := flag.String("frames", "", "the UI frame-time lines (frontend/e2e/frames.ts), one a run, if it ran")
	out := flag.String("out", "", "also write the table here")
	flag.Parse()
	results, rounds, failed, err := read(os.Stdin, os.Stdout)
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
	table := render(rows(results, rounds, ui))
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

// rounds is every run's figures of each benchmark and metric, in the order
// they ran: scripts/bench runs every benchmark once a round, so the i-th
// figures of two benchmarks come from the same round.
type rounds map[string]map[string][]float64

var benchLine = regexp.MustCompile(`^(Benchmark[^\s]+?)(-\d+)?\s+\d+\s+(.*)$`)

// read passes in to echo and collects every benchmark's figures, each the
// median of its runs (so one slow moment of the machine does not make the
// row), and every run's (rounds); failed says a benchmark or package
// failed.
func read(in io.Reader, echo io.Writer) (map[string]result, rounds, bool, error) {
	out := map[string]result{}
	runs := rounds{}
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
			r[metric] = median(vs)
		}
		out[name] = r
	}
	return out, runs, failed, sc.Err()
}

func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	return s[len(s)/2]
}

// pair is Conch's figure and its limit's from one round.
type pair struct {
	ours, limit float64
	// round is the round's index (-1: the medians of unpaired runs).
	round int
}

// paired answers the round whose ratio(ours, limit) is the median of the
// rounds', so the row's figures and ratio are those of one round, each
// figure beside the limit measured minutes, not a whole run, from it.
// When the two did not run the same number of times, it answers their
// medians.
func paired(r map[string]result, rs rounds, ours, om, limit, lm string, ratio func(o, w float64) float64) (pair, bool) {
	o, w := rs[ours][om], rs[limit][lm]
	if len(o) == 0 || len(w) == 0 {
		return pair{}, false
	}
	if len(o) != len(w) {
		return pair{r[ours][om], r[limit][lm], -1}, true
	}
	ps := make([]pair, len(o))
	for i := range o {
		ps[i] = pair{o[i], w[i], i}
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return cmp.Compare(ratio(a.ours, a.limit), ratio(b.ours, b.limit)) })
	return ps[len(ps)/2], true
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
	// all is the same page's once every task was loaded (ui-frames-all),
	// and limit the still page's (ui-frames-limit), recorded in the same
	// run under the same load (nil: the run did not record it).
	all, limit *frameFigures
	// allLimit is the still page's of the run whose all is shown (the
	// median of the runs' all, which need not be the median run's).
	allLimit *frameFigures
}

// frameFigures is the p95 and the share of late frames of a recording.
type frameFigures struct {
	p95, late float64
}

var (
	framesRe = regexp.MustCompile(`^ui-frames: .*p95 ([\d.]+) ms.* at (\d+) tasks, ([\d.]+) updates/s`)
	limitRe  = regexp.MustCompile(`^ui-frames-limit: .*p95 ([\d.]+) ms`)
	allRe    = regexp.MustCompile(`^ui-frames-all: .*p95 ([\d.]+) ms`)
	lateRe   = regexp.MustCompile(`\(([\d.]+)% late\)`)
)

// lateOf is the share of late frames a line says (-1: it does not).
func lateOf(line string) float64 {
	if l := lateRe.FindStringSubmatch(line); l != nil {
		v, _ := strconv.ParseFloat(l[1], 64)
		return v
	}
	return -1
}

// parseFrames reads the runs' lines (each ui-frames line, and the
// ui-frames-all and ui-frames-limit lines after it) and answers the median
// run, ordered by the share of late frames (finer than p95, which lands on
// whole frames) and then by p95, with its own other recordings.
func parseFrames(s string) *frameLine {
	var runs []frameLine
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if len(runs) > 0 {
			if m := limitRe.FindStringSubmatch(line); m != nil {
				p95, _ := strconv.ParseFloat(m[1], 64)
				runs[len(runs)-1].limit = &frameFigures{p95: p95, late: lateOf(line)}
				continue
			}
			if m := allRe.FindStringSubmatch(line); m != nil {
				p95, _ := strconv.ParseFloat(m[1], 64)
				runs[len(runs)-1].all = &frameFigures{p95: p95, late: lateOf(line)}
				continue
			}
		}
		m := framesRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		p95, _ := strconv.ParseFloat(m[1], 64)
		n, _ := strconv.Atoi(m[2])
		u, _ := strconv.ParseFloat(m[3], 64)
		runs = append(runs, frameLine{p95: p95, tasks: n, updates: u, late: lateOf(line)})
	}
	if len(runs) == 0 {
		return nil
	}
	byFigures := func(a, b *frameFigures) int { return cmp.Or(cmp.Compare(a.late, b.late), cmp.Compare(a.p95, b.p95)) }
	var alls []frameLine
	for _, r := range runs {
		if r.all != nil {
			alls = append(alls, r)
		}
	}
	slices.SortStableFunc(runs, func(a, b frameLine) int {
		return byFigures(&frameFigures{p95: a.p95, late: a.late}, &frameFigures{p95: b.p95, late: b.late})
	})
	mid := runs[(len(runs)-1)/2]
	mid.runs = len(runs)
	mid.all, mid.allLimit = nil, nil
	if len(alls) > 0 {
		slices.SortStableFunc(alls, func(a, b frameLine) int { return byFigures(a.all, b.all) })
		m := alls[(len(alls)-1)/2]
		mid.all, mid.allLimit = m.all, m.limit
	}
	return &mid
}

// row is one line of the table.
type row struct {
	what, conch, limit, ratio, goal string
}

func rows(r map[string]result, rs rounds, ui *frameLine) []row {
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
		return row{what, "did not run (" + strings.Join(slices.Compact(names), ", ") + ")", "", "", goal}
	}
	// Lower is better: the limit over ours; higher is better: ours over it.
	lower := func(o, w float64) float64 { return w / o }
	higher := func(o, w float64) float64 { return o / w }
	// rate compares two benchmarks' operations per second.
	rate := func(what, unit, ours, raw, goal string) (row, pair) {
		p, ok := paired(r, rs, ours, "ns/op", raw, "ns/op", lower)
		if !ok {
			return missing(what, goal, ours, raw), p
		}
		return row{what, fmt.Sprintf("%.0f %s", 1e9/p.ours, unit), fmt.Sprintf("%.0f %s (%s)", 1e9/p.limit, unit, strings.TrimPrefix(raw, "Benchmark")),
			fmt.Sprintf("%.2f×", lower(p.ours, p.limit)), goal}, p
	}
	store, round := rate("state changes persisted (64 tasks at once, in a store of 20,000)", "/s", "BenchmarkPutTaskParallel", "BenchmarkRawBoltCommit", "≥ 10×, p99 < 10 ms")
	if p99, ok := get("BenchmarkPutTaskParallel", "p99-ms"); ok && store.ratio != "" {
		// The p99 of the round shown.
		if p99s := rs["BenchmarkPutTaskParallel"]["p99-ms"]; round.round >= 0 && round.round < len(p99s) {
			p99 = p99s[round.round]
		}
		store.conch += fmt.Sprintf(", p99 %.1f ms", p99)
	}
	shell, _ := rate("shell tasks finished (`true`, auto, 3 sent and run at once)", "/s", "BenchmarkShellTasks", "BenchmarkRawSpawn", "≥ 0.5×")
	out = append(out, store, shell)
	mb := func(what, ours, raw, goal string) row {
		p, ok := paired(r, rs, ours, "MB/s", raw, "MB/s", higher)
		if !ok {
			return missing(what, goal, ours, raw)
		}
		return row{what, fmt.Sprintf("%.0f MB/s", p.ours), fmt.Sprintf("%.0f MB/s (%s)", p.limit, strings.TrimPrefix(raw, "Benchmark")), fmt.Sprintf("%.2f×", higher(p.ours, p.limit)), goal}
	}
	out = append(out,
		mb("output ingest, 200 MB from one task", "BenchmarkShellTaskOutput", "BenchmarkRawCommandToFile", "≥ 0.8×"),
		mb("output writer, 64 KiB writes", "BenchmarkWriterWrite", "BenchmarkRawFileWrite", ""))
	// latency compares a metric in milliseconds (lower is better).
	latency := func(what, ours, om, raw, rm, goal, rawWhat string) row {
		p, ok := paired(r, rs, ours, om, raw, rm, lower)
		if !ok {
			return missing(what, goal, ours, raw)
		}
		return row{what, fmt.Sprintf("%.1f ms", p.ours), fmt.Sprintf("%.1f ms (%s)", p.limit, rawWhat), fmt.Sprintf("%.2f×", lower(p.ours, p.limit)), goal}
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
	out = append(out, agentRows(latency, get)...)
	out = append(out,
		latency("Send → first output of a command on a host (its runner up, over real ssh on loopback)", "BenchmarkHostSend", "ms",
			"BenchmarkRawSSHTrue", "ms", "≥ 0.67× (takes ≤ 1.5× as long)", "`ssh host true` on the same connection"),
		latency("output of a task on a host to this computer's page (task.output and a read), p99", "BenchmarkHostOutput", "p99-ms",
			"BenchmarkRawSSHOutput", "p99-ms", "≤ 100 ms", "the same lines straight from ssh"))
	out = append(out, searchRows(get)...)
	return append(out, uiRows(ui)...)
}

// searchRows are full-text search's figures on a seeded home: a search's
// p99 beside bleve's own term query on the same index, a finish to being
// found, the rebuild, and the index's size beside the store's.
func searchRows(get func(name, metric string) (float64, bool)) []row {
	const bench = "BenchmarkSearch100k"
	ours, ok := get(bench, "p99-ms")
	if !ok {
		return []row{{"search p99, 100,000 tasks and their chats", "did not run (" + bench + ")", "", "", "< 50 ms"}}
	}
	raw, _ := get(bench, "raw-p99-ms")
	found, _ := get(bench, "searchable-ms")
	rebuild, _ := get(bench, "rebuild-s")
	index, _ := get(bench, "index-MB")
	st, _ := get(bench, "store-MB")
	return []row{
		{"search p99, 100,000 tasks and their chats", fmt.Sprintf("%.1f ms", ours), fmt.Sprintf("%.2f ms (bleve's own term query, same index)", raw), fmt.Sprintf("%.2f×", raw/ours), "< 50 ms"},
		{"a task's finish → found by search", fmt.Sprintf("%.0f ms", found), "", "", "< 1 s"},
		{"search index rebuilt from the store", fmt.Sprintf("%.0f s", rebuild), fmt.Sprintf("index %.0f MB beside a %.0f MB store", index, st), fmt.Sprintf("%.2f× the store", index/st), "in the background"},
	}
}

// agentRows are Conch's own cost per coding-agent CLI: the time from Send
// to the CLI's first model request beside the same CLI started directly,
// and the memory the conch process grows by per agent task running.
// uiRows are the UI frame-time rows, from the frames run's line (nil when
// it did not run).
func uiRows(ui *frameLine) []row {
	if ui == nil {
		return []row{{"UI p95 frame time, 10,000 tasks, 100 updates/s", "did not run (npm --prefix frontend run frames)", "", "", "≤ 16.7 ms"}}
	}
	var out []row
	// The limit is the still page's, when the run recorded it, and
	// never below one frame at 60 Hz.
	limitOf := func(l *frameFigures) (float64, string) {
		if l == nil {
			return 16.7, "16.7 ms (one frame at 60 Hz)"
		}
		said := fmt.Sprintf("%.1f ms (a still page of as many rows, the same load", l.p95)
		if l.late >= 0 {
			said += fmt.Sprintf(": %.1f%% of frames late", l.late)
		}
		return max(l.p95, 16.7), said + ")"
	}
	limit, said := limitOf(ui.limit)
	figure := func(p95, late float64) string {
		s := fmt.Sprintf("%.1f ms", p95)
		var notes []string
		if late >= 0 {
			notes = append(notes, fmt.Sprintf("%.1f%% of frames late", late))
		}
		if ui.runs > 1 {
			notes = append(notes, fmt.Sprintf("the median of %d runs", ui.runs))
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, "; ") + ")"
		}
		return s
	}
	out = append(out, row{fmt.Sprintf("UI p95 frame time, %d tasks, %.0f updates/s", ui.tasks, ui.updates), figure(ui.p95, ui.late),
		said, fmt.Sprintf("%.2f×", limit/ui.p95), "≤ 16.7 ms"})
	if a := ui.all; a != nil {
		limit, said := limitOf(ui.allLimit)
		out = append(out, row{fmt.Sprintf("UI p95 frame time, %d tasks all loaded (scrolled to the end), same load", ui.tasks), figure(a.p95, a.late),
			said, fmt.Sprintf("%.2f×", limit/a.p95), "≤ 16.7 ms"})
	}
	return out
}

func agentRows(latency func(what, ours, om, raw, rm, goal, rawWhat string) row, get func(name, metric string) (float64, bool)) []row {
	var out []row
	for _, cli := range []struct{ name, bench string }{{"Claude Code", "claude"}, {"Codex", "codex"}, {"Gemini CLI", "gemini"}} {
		out = append(out, latency("Send → "+cli.name+"'s first model request", "BenchmarkAgentFirstRequest/"+cli.bench, "first-ms",
			"BenchmarkAgentFirstRequest/"+cli.bench, "direct-ms", "≥ 0.91× (adds ≤ 10%)", "the CLI started directly, same prompt, in turns with the sends"))
	}
	var each []string
	for _, n := range []string{"1", "4", "8"} {
		v, ok := get("BenchmarkAgentTaskMemory/"+n, "mb-per-task")
		if !ok {
			return append(out, row{"Conch's memory per running agent task (1, 4, 8 at once)", "did not run (BenchmarkAgentTaskMemory)", "", "", "≤ 5 MB each"})
		}
		each = append(each, fmt.Sprintf("%.1f", v))
	}
	return append(out, row{"Conch's memory per running agent task (1, 4, 8 at once)", strings.Join(each, " · ") + " MB",
		"the conch process alone (each task's Claude Code not counted)", "", "≤ 5 MB each"})
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
