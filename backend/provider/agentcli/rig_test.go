//go:build unix

package agentcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/procmark"
	"conch/backend/provider"
)

// The tests in *_real_test.go run the real CLIs against a scripted model
// server on loopback, set up by agentrig.

// testMark is a mark of its own for one test's processes.
func testMark(t *testing.T) procmark.Mark {
	return procmark.Mark{Home: "agentcli-test-" + strconv.FormatInt(time.Now().UnixNano(), 36), Chat: t.Name()}
}

// marked lists the live processes carrying home's mark, read from
// /proc/*/environ, with their command lines.
func marked(home string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(procmark.EnvHome+"="+home+"\x00")) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			// A zombie has ended; it only waits for its parent to reap it.
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue
			}
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, strconv.Itoa(pid)+" "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return out
}

// waitFor polls cond every 20 ms until it holds, failing after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// asks records the steps put to the gate and answers them with answer.
type asks struct {
	mu     sync.Mutex
	got    []provider.Action
	answer func(provider.Action) bool
}

// ask is a Request.Ask: nil answer allows everything.
func (a *asks) ask(_ context.Context, act provider.Action) (bool, error) {
	a.mu.Lock()
	a.got = append(a.got, act)
	a.mu.Unlock()
	return a.answer == nil || a.answer(act), nil
}

func (a *asks) all() []provider.Action {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]provider.Action(nil), a.got...)
}

// texts joins a stream's text, and lists its steps and notices.
func texts(evs []provider.Event) (reply string, steps, notices []string) {
	var b strings.Builder
	for _, ev := range evs {
		switch ev.Kind {
		case provider.TextDelta:
			b.WriteString(ev.Text)
		case provider.StepEvent:
			steps = append(steps, ev.Text)
		case provider.NoticeEvent:
			notices = append(notices, ev.Text)
		}
	}
	return b.String(), steps, notices
}

// collectFor reads a stream to its end, failing after d.
func collectFor(t *testing.T, d time.Duration, ch <-chan provider.Event) []provider.Event {
	t.Helper()
	var evs []provider.Event
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("stream did not end in %s; so far %+v", d, briefs(evs))
		}
	}
}
