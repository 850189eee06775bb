package agentcli

import (
	"bytes"
	"strings"
	"sync"
)

// tail keeps the last bytes a CLI wrote on stderr, and hands each whole
// line to onLine when one is set (Gemini CLI says there that it retries).
type tail struct {
	mu      sync.Mutex
	buf     []byte
	onLine  func(string)
	partial []byte // the line being written, for onLine
}

const tailBytes = 4096

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	var lines []string
	if t.onLine != nil {
		t.partial = append(t.partial, b...)
		for {
			i := bytes.IndexByte(t.partial, '\n')
			if i < 0 {
				break
			}
			lines = append(lines, plain(string(t.partial[:i])))
			t.partial = t.partial[i+1:]
		}
		if len(t.partial) > tailBytes { // a line that never ends is cut
			lines = append(lines, plain(string(t.partial)))
			t.partial = nil
		}
	}
	onLine := t.onLine
	t.mu.Unlock()
	for _, l := range lines {
		onLine(l)
	}
	return len(b), nil
}

// lineHook sets onLine.
func (t *tail) lineHook(fn func(string)) {
	t.mu.Lock()
	t.onLine = fn
	t.mu.Unlock()
}

// lines returns the last few non-empty lines, joined with " | ".
func (t *tail) lines() string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > 5 {
		keep = keep[len(keep)-5:]
	}
	out := strings.Join(keep, " | ")
	if r := []rune(out); len(r) > 600 {
		out = "…" + string(r[len(r)-600:])
	}
	return out
}
