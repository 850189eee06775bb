// Command load puts a real `conch serve` under many loopback clients at
// once for a while (`make load`): each client sends a mix of what the app
// sends (the task list, a page of finished tasks, a search, one task, its
// output, a new shell task, the chat list, one chat, a new chat) as fast as
// it is answered. It prints the
// answers' latency percentiles per kind and fails when any answer was a
// 5xx or a request got no answer at all.
//
//	go run ./backend/devcmd/load -bin build/bin/conch -clients 200 -duration 60s
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("bin", "build/bin/conch", "the conch binary to serve")
	clients := flag.Int("clients", 200, "clients at once")
	duration := flag.Duration("duration", 60*time.Second, "how long they send")
	seeded := flag.Int("tasks", 2000, "finished tasks sent before the clients start")
	flag.Parse()
	rep, err := run(*bin, *clients, *duration, *seeded)
	if rep != nil {
		fmt.Print(rep.String())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

var servingLine = regexp.MustCompile(`conch: serving (http://127\.0\.0\.1:\d+)/#token=([0-9a-f]+)`)

// serve starts `conch serve` on a fresh home and returns its address and
// token, and how to stop it.
func serve(bin, home string) (base, token string, stop func(), err error) {
	cmd := exec.Command(bin, "serve", "--home", home, "--addr", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		l, _ := r.ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case l := <-line:
		m := servingLine.FindStringSubmatch(l)
		if m == nil {
			stop()
			return "", "", nil, fmt.Errorf("serve printed %q", l)
		}
		return m[1], m[2], stop, nil
	case <-time.After(20 * time.Second):
		stop()
		return "", "", nil, errors.New("conch serve printed nothing in 20 s")
	}
}

// client is one loopback client: its own connection, kept alive.
type client struct {
	base, token string
	http        *http.Client
}

func (c *client) do(ctx context.Context, method, path, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// kinds are the requests a client sends, with their weights.
var kinds = []struct {
	name   string
	weight int
}{{"list", 34}, {"finished page", 13}, {"search", 13}, {"task", 13}, {"output", 10}, {"create", 3},
	{"chats", 8}, {"chat", 4}, {"new chat", 2}}

// report gathers the answers.
type report struct {
	mu        sync.Mutex
	waits     map[string][]time.Duration
	statuses  map[int]int
	failures  map[string]int // requests that got no answer, by error
	elapsed   time.Duration
	clients   int
	serverErr int
}

func (r *report) add(kind string, status int, wait time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failures[err.Error()]++
		return
	}
	r.waits[kind] = append(r.waits[kind], wait)
	r.statuses[status]++
	if status >= 500 {
		r.serverErr++
	}
}

func pct(ws []time.Duration, p int) time.Duration { return ws[min(len(ws)-1, len(ws)*p/100)] }

func (r *report) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	total := 0
	fmt.Fprintf(&b, "%-14s %8s %9s %9s %9s %9s\n", "request", "count", "p50", "p90", "p99", "max")
	var all []time.Duration
	for _, k := range kinds {
		ws := r.waits[k.name]
		if len(ws) == 0 {
			continue
		}
		slices.Sort(ws)
		total += len(ws)
		all = append(all, ws...)
		fmt.Fprintf(&b, "%-14s %8d %9s %9s %9s %9s\n", k.name, len(ws), round(pct(ws, 50)), round(pct(ws, 90)), round(pct(ws, 99)), round(ws[len(ws)-1]))
	}
	if len(all) > 0 {
		slices.Sort(all)
		fmt.Fprintf(&b, "%-14s %8d %9s %9s %9s %9s\n", "all", len(all), round(pct(all, 50)), round(pct(all, 90)), round(pct(all, 99)), round(all[len(all)-1]))
	}
	fmt.Fprintf(&b, "%d clients for %s: %.0f answers/s; statuses %v; 5xx: %d; no answer: %d %v\n",
		r.clients, r.elapsed.Round(time.Second), float64(total)/r.elapsed.Seconds(), r.statuses, r.serverErr, sum(r.failures), r.failures)
	return b.String()
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func round(d time.Duration) time.Duration {
	if d > time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func run(bin string, clients int, duration time.Duration, seeded int) (*report, error) {
	home, err := os.MkdirTemp("", "conch-load-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	work, err := os.MkdirTemp("", "conch-load-work-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	base, token, stop, err := serve(bin, home)
	if err != nil {
		return nil, err
	}
	defer stop()
	m := &mix{ctx: context.Background(), work: work}
	if err := m.seed(&client{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second}}, seeded); err != nil {
		return nil, err
	}
	rep := &report{waits: map[string][]time.Duration{}, statuses: map[int]int{}, failures: map[string]int{}, clients: clients}
	deadline := time.Now().Add(duration)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		c := &client{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		wg.Go(func() {
			for time.Now().Before(deadline) {
				kind := pick(rng)
				id := m.ids[rng.IntN(len(m.ids))]
				t0 := time.Now()
				code, err := m.send(c, kind, id, rng)
				rep.add(kind, code, time.Since(t0), err)
			}
		})
	}
	wg.Wait()
	rep.elapsed = time.Since(began)
	if rep.serverErr > 0 || sum(rep.failures) > 0 {
		return rep, fmt.Errorf("%d answers were 5xx and %d requests got no answer", rep.serverErr, sum(rep.failures))
	}
	return rep, nil
}

// mix is what the clients' requests are made of: the tasks' folder and the
// tasks and chats seeded before the load starts.
type mix struct {
	ctx   context.Context
	work  string
	ids   []string
	chats []string
}

// seed raises the background limit and makes seeded tasks and one chat
// for every 20 of them (at least one).
func (m *mix) seed(setup *client, seeded int) error {
	if code, b, err := setup.do(m.ctx, "PATCH", "/api/preferences", `{"limits":{"background":8}}`); err != nil || code != 200 {
		return fmt.Errorf("raise the limit: %d %s %v", code, b, err)
	}
	for i := range max(1, seeded/20) {
		code, b, err := m.newChat(setup, i)
		if err != nil || code != 201 {
			return fmt.Errorf("seed a chat: %d %s %v", code, b, err)
		}
		var c struct{ ID string }
		_ = json.Unmarshal(b, &c)
		m.chats = append(m.chats, c.ID)
	}
	for range seeded {
		code, b, err := m.create(setup)
		if err != nil || code != 201 {
			return fmt.Errorf("seed a task: %d %s %v", code, b, err)
		}
		var t struct{ ID string }
		_ = json.Unmarshal(b, &t)
		m.ids = append(m.ids, t.ID)
	}
	return nil
}

func (m *mix) create(c *client) (int, []byte, error) {
	body, _ := json.Marshal(map[string]any{"text": "echo load", "options": map[string]string{"mode": "auto", "cwd": m.work}})
	return c.do(m.ctx, "POST", "/api/tasks", string(body))
}

func (m *mix) newChat(c *client, n int) (int, []byte, error) {
	body, _ := json.Marshal(map[string]any{"title": fmt.Sprintf("Load chat %d", n), "cwd": m.work})
	return c.do(m.ctx, "POST", "/api/conversations", string(body))
}

// send makes one request of the kind pick chose, about task id (or a
// chat rng picks), and returns its status.
func (m *mix) send(c *client, kind, id string, rng *rand.Rand) (int, error) {
	var code int
	var err error
	switch kind {
	case "list":
		code, _, err = c.do(m.ctx, "GET", "/api/tasks", "")
	case "finished page":
		code, _, err = c.do(m.ctx, "GET", "/api/tasks?group=finished&limit=50", "")
	case "search":
		code, _, err = c.do(m.ctx, "GET", "/api/tasks?group=finished&q=echo", "")
	case "task":
		code, _, err = c.do(m.ctx, "GET", "/api/tasks/"+id, "")
	case "output":
		code, _, err = c.do(m.ctx, "GET", "/api/tasks/"+id+"/output", "")
	case "create":
		code, _, err = m.create(c)
	case "chats":
		code, _, err = c.do(m.ctx, "GET", "/api/conversations?limit=50", "")
	case "chat":
		code, _, err = c.do(m.ctx, "GET", "/api/conversations/"+m.chats[rng.IntN(len(m.chats))], "")
	case "new chat":
		code, _, err = m.newChat(c, rng.IntN(1_000_000))
	}
	return code, err
}

func pick(rng *rand.Rand) string {
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	n := rng.IntN(total)
	for _, k := range kinds {
		if n < k.weight {
			return k.name
		}
		n -= k.weight
	}
	return kinds[0].name
}
