//go:build unix

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"conch/backend/conversation"
	"conch/backend/task"
	"conch/backend/testrig/agentbin"
	"conch/backend/testrig/agentrig"
	"conch/backend/testrig/modelserver"
)

// markers numbers the prompts of a test binary's run, so no two share one.
var markers atomic.Int64

// agentRuns is how many sends each first-request benchmark times, and
// as many direct starts beside them, of which it reports the medians.
const agentRuns = 9

// arrivals notes when each prompt's first model request arrived at the
// scripted servers, and can keep tasks working until let go (to read
// memory while they run).
type arrivals struct {
	mu      sync.Mutex
	first   map[string]time.Time // by the prompt's marker
	changed chan struct{}        // closed (and made anew) at each first arrival
	gate    string               // "", or the file held tasks' commands wait for
}

func newArrivals() *arrivals {
	return &arrivals{first: map[string]time.Time{}, changed: make(chan struct{})}
}

// brain answers a CLI's model: it notes the first request of each prompt
// ("BENCH <marker>: …") and says "Done."; while tasks are held, a task's
// model first runs a command that waits for the gate file. (The servers
// answer one request at a time, so a request itself cannot be held.)
func (a *arrivals) brain(agent agentrig.Agent) modelserver.Brain {
	return func(turn modelserver.Turn) modelserver.Reply {
		// The last marker is the prompt's own: a task's prompt may quote
		// its chat, and with it the markers of tasks sent before.
		first := turn.FirstUser()
		at := strings.LastIndex(first, "BENCH ")
		if at < 0 {
			return modelserver.Reply{Text: "Done."}
		}
		mk, _, _ := strings.Cut(first[at+len("BENCH "):], ":")
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, seen := a.first[mk]; !seen {
			a.first[mk] = time.Now()
			close(a.changed)
			a.changed = make(chan struct{})
		}
		if a.gate != "" && len(turn.Results()) == 0 && strings.Contains(first, "handed off from another chat") {
			return modelserver.Reply{Calls: []modelserver.Call{agent.Run(fmt.Sprintf("while [ ! -e %q ]; do sleep 0.05; done", a.gate))}}
		}
		return modelserver.Reply{Text: "Done."}
	}
}

// wait is when marker mk's first request came, within a minute; a
// process that exits before (exited) fails the benchmark with its output.
func (a *arrivals) wait(b *testing.B, mk string, exited ...<-chan string) time.Time {
	b.Helper()
	deadline := time.After(time.Minute)
	for {
		a.mu.Lock()
		at, ok := a.first[mk]
		changed := a.changed
		a.mu.Unlock()
		if ok {
			return at
		}
		var gone <-chan string
		if len(exited) > 0 {
			gone = exited[0]
		}
		select {
		case <-changed:
		case out := <-gone:
			b.Fatalf("the CLI ended before its model heard prompt %s:\n%s", mk, out)
		case <-deadline:
			b.Fatalf("the model never heard prompt %s", mk)
		}
	}
}

// waitHeld waits, a minute at most, until n processes run the held
// tasks' command.
func (a *arrivals) waitHeld(b *testing.B, n int) {
	b.Helper()
	a.mu.Lock()
	gate := a.gate
	a.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		held := 0
		for _, p := range procs {
			if c, err := os.ReadFile(p); err == nil && strings.Contains(string(c), gate) {
				held++
			}
		}
		if held >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d held tasks run their command", held, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// holdTasks keeps the tasks sent from now working, each in a command
// that waits, until the returned func lets them all go.
func (a *arrivals) holdTasks(b *testing.B) (letGo func()) {
	gate := filepath.Join(b.TempDir(), "go")
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gate = gate
	open := func() {
		a.mu.Lock()
		a.gate = ""
		a.mu.Unlock()
		_ = os.WriteFile(gate, nil, 0o644)
	}
	b.Cleanup(open) // a benchmark that failed while they were held
	return open
}

// agentServe is a conch serve whose PATH has the pinned CLIs, all three
// talking to scripted model servers answering through arr.
func agentServe(b *testing.B) (*server, *arrivals, []string) {
	b.Helper()
	agentbin.Path(b, agentbin.Claude) // skips, saying why, when the CLIs are not installed
	arr := newArrivals()
	servers, err := agentrig.Start(b.TempDir(), arr.brain)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(servers.Close)
	s := startWith(b, b.TempDir(), servers.Env)
	return s, arr, servers.Env
}

// directArgs is each CLI run on its own with a prompt, as a person would
// from a terminal, printing its JSON events.
var directArgs = map[string]func(prompt string) []string{
	agentbin.Claude: func(p string) []string { return []string{"-p", p, "--output-format", "stream-json", "--verbose"} },
	agentbin.Codex:  func(p string) []string { return []string{"exec", "--json", "--skip-git-repo-check", p} },
	agentbin.Gemini: func(p string) []string {
		return []string{"-p", p, "--output-format", "stream-json", "-m", "gemini-2.5-flash", "--skip-trust"}
	},
}

// BenchmarkAgentFirstRequest is the time from Send in a new chat of each
// coding-agent CLI, in a real conch serve, to that CLI's first model
// request (first-ms, the median of agentRuns sends), and its limit: the
// same CLI with the same prompt started directly (direct-ms, the median
// of as many starts). A CLI's start varies by a tenth or more from one
// run to the next as the machine's load moves, so the two are measured
// in turns, one send then one start, each round beginning with the other
// of the two, rather than all sends and then all starts.
func BenchmarkAgentFirstRequest(b *testing.B) {
	s, arr, env := agentServe(b)
	for _, a := range agentrig.Agents {
		b.Run(a.Kind, func(b *testing.B) {
			bin := agentbin.Path(b, a.Kind)
			var viaConch, direct []time.Duration
			for b.Loop() {
				for i := range agentRuns {
					send := func() { viaConch = append(viaConch, sendFirst(b, s, arr, a, i)) }
					start := func() { direct = append(direct, startFirst(b, arr, env, bin, a, i)) }
					if i%2 == 0 {
						send()
						start()
					} else {
						start()
						send()
					}
				}
			}
			b.StopTimer()
			reportMedian(b, viaConch, "first-ms")
			reportMedian(b, direct, "direct-ms")
		})
	}
}

// sendFirst makes a new chat of agent a in s and sends it a prompt: how
// long from the Send until the CLI's model heard it. It returns once the
// chat's turn has ended.
func sendFirst(b *testing.B, s *server, arr *arrivals, a agentrig.Agent, i int) time.Duration {
	b.Helper()
	var c conversation.Conversation
	body := fmt.Sprintf(`{"provider":%q,"mode":"auto","cwd":%q}`, registryID(a), b.TempDir())
	if code := s.call(b, "POST", "/api/conversations", body, &c); code != 201 {
		b.Fatalf("make a %s chat: %d", a.Name, code)
	}
	mk := fmt.Sprintf("c-%s-%d-%d", a.ID, markers.Add(1), i)
	sent := time.Now()
	if code := s.call(b, "POST", "/api/conversations/"+c.ID+"/messages", `{"text":"BENCH `+mk+`: say done"}`, nil); code != 202 {
		b.Fatalf("send: %d", code)
	}
	took := arr.wait(b, mk).Sub(sent)
	waitIdle(b, s, c.ID)
	return took
}

// startFirst starts the CLI bin directly (directArgs) in the same
// environment with a prompt: how long from its start until its model
// heard the prompt. It returns once the CLI has ended.
func startFirst(b *testing.B, arr *arrivals, env []string, bin string, a agentrig.Agent, i int) time.Duration {
	b.Helper()
	mk := fmt.Sprintf("d-%s-%d-%d", a.ID, markers.Add(1), i)
	cmd := exec.Command(bin, directArgs[a.Kind]("BENCH "+mk+": say done")...)
	cmd.Dir, cmd.Env = b.TempDir(), append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan string, 1)
	go func() {
		err := cmd.Wait()
		exited <- fmt.Sprintf("%v\n%s", err, out.String())
	}()
	took := arr.wait(b, mk, exited).Sub(began)
	if res := <-exited; !strings.HasPrefix(res, "<nil>") {
		b.Fatalf("%s on its own: %s", a.Name, res)
	}
	return took
}

// BenchmarkAgentTaskMemory is how much Conch's own resident memory grows
// (mb-per-task: the conch process alone, so not the CLIs' own) for each
// Claude Code background task running at once, at 1, 4 and 8: each
// task's model runs a command that waits while the memory is read, so
// every task is running, its CLI started and Conch's side of it (the run,
// the MCP server, the gate, the event readers) live.
func BenchmarkAgentTaskMemory(b *testing.B) {
	s, arr, _ := agentServe(b)
	if code := s.call(b, "PATCH", "/api/preferences", `{"limits":{"background":8,"helper":4}}`, nil); code != 200 {
		b.Fatalf("raise the limit: %d", code)
	}
	claude := agentrig.Agents[0]
	var c conversation.Conversation
	if code := s.call(b, "POST", "/api/conversations", fmt.Sprintf(`{"provider":%q,"mode":"auto","cwd":%q}`, registryID(claude), b.TempDir()), &c); code != 201 {
		b.Fatalf("make a chat: %d", code)
	}
	run := func(b *testing.B, n int, hold bool) (grown float64) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var letGo func()
		if hold {
			letGo = arr.holdTasks(b)
		}
		before := steadyRSS(b, s.cmd.Process.Pid)
		var ids []string
		var mks []string
		for i := range n {
			mk := fmt.Sprintf("m-%d-%d-%d", n, markers.Add(1), i)
			var tk task.Task
			body := fmt.Sprintf(`{"conversationId":%q,"text":"BENCH %s: say done"}`, c.ID, mk)
			if code := s.call(b, "POST", "/api/tasks", body, &tk); code != 201 {
				b.Fatalf("start task %d: %d", i, code)
			}
			ids, mks = append(ids, tk.ID), append(mks, mk)
		}
		for _, mk := range mks {
			arr.wait(b, mk, s.tasksGone(ctx, ids))
		}
		if hold {
			arr.waitHeld(b, n)
		}
		during := steadyRSS(b, s.cmd.Process.Pid)
		if letGo != nil {
			letGo()
		}
		for _, id := range ids {
			if got := s.waitTask(b, id, func(t task.Task) bool { return t.Status.Finished() }); got.Status != task.Done {
				b.Fatalf("task %s ended %s: %s", id, got.Status, got.Error)
			}
		}
		return (during - before) / float64(n)
	}
	run(b, 2, false) // the first run loads what every later one shares
	for _, n := range []int{1, 4, 8} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var grown []float64
			for b.Loop() {
				grown = append(grown, run(b, n, true))
			}
			b.StopTimer()
			slices.Sort(grown)
			b.ReportMetric(grown[len(grown)/2], "mb-per-task")
		})
	}
}

// tasksGone says, when one of the tasks ids has finished, how each
// stands; it looks until ctx ends.
func (s *server) tasksGone(ctx context.Context, ids []string) <-chan string {
	gone := make(chan string, 1)
	go func() {
		for ctx.Err() == nil {
			var desc []string
			over := false
			for _, id := range ids {
				var tk task.Task
				if _, err := s.try("GET", "/api/tasks/"+id, "", &tk); err != nil {
					return
				}
				over = over || tk.Status.Finished()
				desc = append(desc, fmt.Sprintf("%s %s %s %q", id, tk.Status, tk.Current, tk.Error))
			}
			if over {
				gone <- strings.Join(desc, "\n")
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return gone
}

// registryID is the provider id Conch gives a CLI found on PATH.
func registryID(a agentrig.Agent) string {
	if a.Kind == agentbin.Claude {
		return "claude-code"
	}
	return a.Kind
}

// waitIdle waits until chat id's turn has ended.
func waitIdle(b *testing.B, s *server, id string) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var got struct {
			Conversation conversation.Conversation `json:"conversation"`
		}
		if code := s.call(b, "GET", "/api/conversations/"+id+"?limit=1", "", &got); code != 200 {
			b.Fatalf("read chat: %d", code)
		}
		if !got.Conversation.Running {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("the chat's turn never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// steadyRSS is pid's resident memory once it stops moving: the median of
// five reads 50 ms apart.
func steadyRSS(b *testing.B, pid int) float64 {
	var reads []float64
	for range 5 {
		time.Sleep(50 * time.Millisecond)
		reads = append(reads, rssMB(b, pid))
	}
	slices.Sort(reads)
	return reads[len(reads)/2]
}

func reportMedian(b *testing.B, times []time.Duration, unit string) {
	slices.Sort(times)
	b.ReportMetric(ms(times[len(times)/2]), unit)
}
