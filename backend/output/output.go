// Package output keeps each task's output in an append-only file on disk,
// <root>/<id>/output.log, so a long-running task never holds its output in
// memory. Writers append, ReadAt pages through it, and Follow streams what is
// appended, whether by a Writer in this process or by another process.
package output

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// FileName is the name of a task's log inside its directory.
const FileName = "output.log"

// TailSize is how many of the most recent bytes a Writer keeps in memory for
// Tail; larger requests are cut to it.
const TailSize = 16 << 10

// DefaultReadMax is how much ReadAt returns when asked for max <= 0.
const DefaultReadMax = 64 << 10

// chunkSize is the most Follow reads (and sends) at once; with followBuffer it
// bounds the memory one follower holds.
const chunkSize = 64 << 10

// followBuffer is how many chunks a follower may have in flight before it
// waits for its reader.
const followBuffer = 4

// PollInterval is how often Follow checks the file for appends it was not
// woken for (those made by another process).
const PollInterval = 250 * time.Millisecond

// Logs manages every task's output log under root.
type Logs struct {
	root string
	poll time.Duration // PollInterval; tests change it

	mu      sync.Mutex
	signals map[string]*signal // by task id; present while a Writer or follower uses it
}

// New returns the Logs kept under root (usually <home>/tasks). Nothing is
// created until a log is opened.
func New(root string) *Logs {
	return &Logs{root: root, poll: PollInterval, signals: make(map[string]*signal)}
}

// Path returns the file that holds id's log, e.g. for `tail -f`.
func (l *Logs) Path(id string) string {
	return filepath.Join(l.root, id, FileName)
}

// checkID refuses ids that would escape root or name root itself.
func checkID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) || strings.ContainsRune(id, 0) {
		return fmt.Errorf("invalid task id %q", id)
	}
	return nil
}

// Open opens id's log for appending, creating its directory and file when
// needed. A log may be opened again after its Writer is closed (a retried
// task appends to the same log).
func (l *Logs) Open(id string) (*Writer, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("open output: %w", err)
	}
	path := l.Path(id)
	w := &Writer{logs: l, id: id, path: path}
	switch fi, err := os.Stat(path); {
	case err == nil:
		// Tried again or resumed: append to what the earlier runs printed.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open output of task %s: %w", id, err)
		}
		w.f, w.size = f, fi.Size()
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("open output of task %s: %w", id, err)
	}
	// Else the file is made at the first byte: a command that prints
	// nothing costs no folder and no file.
	w.sig = l.acquire(id)
	return w, nil
}

// ReadAt returns up to maxBytes bytes of id's log from offset, and the offset to
// read from next. An offset at the end gives no bytes and next == offset;
// one past the end is clamped to the end (no bytes, next == the size), so a
// reader that overshot carries on from what is there. A negative offset is
// an error. A log that does not exist gives an
// error matching os.ErrNotExist. maxBytes <= 0 means DefaultReadMax.
func (l *Logs) ReadAt(id string, offset int64, maxBytes int) ([]byte, int64, error) {
	if err := checkID(id); err != nil {
		return nil, offset, fmt.Errorf("read output: %w", err)
	}
	if offset < 0 {
		return nil, offset, fmt.Errorf("read output of task %s: negative offset %d", id, offset)
	}
	if maxBytes <= 0 {
		maxBytes = DefaultReadMax
	}
	f, err := os.Open(l.Path(id))
	if err != nil {
		return nil, offset, fmt.Errorf("read output of task %s: %w", id, err)
	}
	defer f.Close()
	// Never allocate more than the file can give: maxBytes may be large.
	fi, err := f.Stat()
	if err != nil {
		return nil, offset, fmt.Errorf("read output of task %s: %w", id, err)
	}
	if offset >= fi.Size() {
		return []byte{}, fi.Size(), nil
	}
	buf := make([]byte, min(int64(maxBytes), fi.Size()-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, offset, fmt.Errorf("read output of task %s at %d: %w", id, offset, err)
	}
	return buf[:n], offset + int64(n), nil
}

// Size returns the size of id's log: 0, and no error, when it does not exist.
func (l *Logs) Size(id string) (int64, error) {
	if err := checkID(id); err != nil {
		return 0, fmt.Errorf("size of output: %w", err)
	}
	fi, err := os.Stat(l.Path(id))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("size of output of task %s: %w", id, err)
	}
	return fi.Size(), nil
}

// Remove deletes id's directory and its log. Close the log's Writer first:
// on Unix an open Writer would go on writing to a file nobody can reach.
func (l *Logs) Remove(id string) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("remove output: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(l.root, id)); err != nil {
		return fmt.Errorf("remove output of task %s: %w", id, err)
	}
	return nil
}

// Follow sends id's log from offset in chunks (each at most 64 KiB, owned by
// the receiver) as it grows, until ctx is done; then it closes the channel.
// Appends through a Writer of this process wake it at once; appends by any
// other process are noticed within PollInterval. A log that does not exist
// yet is followed from when it appears. Memory stays bounded whatever the
// log's size: a slow receiver slows the reads, it does not queue them.
func (l *Logs) Follow(ctx context.Context, id string, offset int64) (<-chan []byte, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("follow output: %w", err)
	}
	if offset < 0 {
		return nil, fmt.Errorf("follow output of task %s: negative offset %d", id, offset)
	}
	ch := make(chan []byte, followBuffer)
	sig := l.acquire(id)
	go l.follow(ctx, id, offset, sig, ch)
	return ch, nil
}

func (l *Logs) follow(ctx context.Context, id string, offset int64, sig *signal, ch chan<- []byte) {
	defer close(ch)
	defer l.release(id)
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	tick := time.NewTicker(l.poll)
	defer tick.Stop()
	buf := make([]byte, chunkSize)
	for {
		// Take the wake-up channel before reading, so an append that lands
		// after the read still wakes us.
		wake := sig.wait()
		for {
			if f == nil {
				var err error
				if f, err = os.Open(l.Path(id)); err != nil {
					// Not there yet (or unreadable for now): look again at
					// the next wake-up or poll.
					f = nil
					break
				}
			}
			n, err := f.ReadAt(buf, offset)
			if n > 0 {
				chunk := make([]byte, n)
				copy(chunk, buf[:n])
				select {
				case ch <- chunk:
				case <-ctx.Done():
					return
				}
				offset += int64(n)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					// Retry from a fresh open at the next poll.
					f.Close()
					f = nil
				}
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

// acquire returns id's wake-up signal, creating it for the first user.
func (l *Logs) acquire(id string) *signal {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.signals[id]
	if s == nil {
		s = &signal{}
		l.signals[id] = s
	}
	s.users++
	return s
}

// release drops one use of id's signal, forgetting it after the last so the
// map does not grow with every task ever run.
func (l *Logs) release(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.signals[id]
	if s.users--; s.users == 0 {
		delete(l.signals, id)
	}
}

// signal wakes every follower of one log when it grows. A channel is closed
// to broadcast and replaced; it is only allocated while someone waits, so
// writes nobody follows cost one uncontended lock.
type signal struct {
	users int // guarded by Logs.mu

	mu      sync.Mutex
	ch      chan struct{}
	waiting bool
}

// wait returns a channel that is closed at the next notify.
func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	s.waiting = true
	return s.ch
}

func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.waiting {
		return
	}
	close(s.ch)
	s.ch = nil
	s.waiting = false
}

// Writer appends to one task's log. Its methods are safe for concurrent use;
// each Write lands whole (writes are not interleaved) and wakes followers.
type Writer struct {
	logs *Logs
	id   string
	sig  *signal

	path string

	mu     sync.Mutex
	f      *os.File // nil until the first byte, and once closed
	size   int64
	tail   ring
	closed bool
	// sf is the file opened again to splice a fast pipe into (Linux):
	// spliced bytes never pass through Conch, so the tail is read back
	// from the file when asked for (stale).
	sf    *os.File
	stale bool
}

// Write appends p to the log.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, fmt.Errorf("write output of task %s: %w", w.id, os.ErrClosed)
	}
	if w.f == nil && len(p) > 0 {
		if err := w.create(); err != nil {
			w.mu.Unlock()
			return 0, err
		}
	}
	if w.f == nil {
		w.mu.Unlock()
		return 0, nil
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	w.tail.write(p[:n])
	w.mu.Unlock()
	if n > 0 {
		w.sig.notify()
	}
	if err != nil {
		return n, fmt.Errorf("write output of task %s: %w", w.id, err)
	}
	return n, nil
}

// The buffers ReadFrom copies through: a small one for the little most
// commands print, a big one once a command prints faster than that drains.
var (
	smallBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
	bigBufs   = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}
)

// ReadFrom appends what r gives until it ends. os/exec copies a command's
// output pipe in here; through io.Copy it would make a new 32 KiB buffer
// for every command, where this takes one from a pool. A read that fills
// the buffer says the command prints fast: the rest is copied in bigger
// reads, from a pipe widened to hold them.
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	pool := &smallBufs
	bp := pool.Get().(*[]byte)
	defer func() { pool.Put(bp) }()
	var total int64
	for {
		n, err := r.Read(*bp)
		if n > 0 {
			m, werr := w.Write((*bp)[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		if n == len(*bp) && pool == &smallBufs {
			pool.Put(bp)
			pool = &bigBufs
			bp = pool.Get().(*[]byte)
			widen(r)
			// A command this fast: move its pipe into the file in the
			// kernel, where that can be done.
			if m, ok, err := w.splice(r); ok {
				return total + m, err
			}
		}
	}
}

// create makes the log's folder and file, for its first byte.
func (w *Writer) create() error {
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return fmt.Errorf("open output of task %s: %w", w.id, err)
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open output of task %s: %w", w.id, err)
	}
	w.f = f
	return nil
}

// Size returns the log's size: what was in the file when it was opened plus
// what this Writer has appended since.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// Tail returns the last n bytes (at most TailSize) written through this
// Writer, from memory, for summaries. It is valid UTF-8: a rune cut by the
// window's edges is dropped, and bytes that were never UTF-8 are replaced by
// U+FFFD (so only then can the result be longer than n).
func (w *Writer) Tail(n int) string {
	w.mu.Lock()
	if w.stale {
		w.refreshTail()
	}
	b := w.tail.last(n)
	w.mu.Unlock()
	return validTail(b)
}

// Close closes the log's file. It is safe to call more than once.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var err error
	if w.f != nil {
		err = w.f.Close()
	}
	if w.sf != nil {
		if serr := w.sf.Close(); err == nil {
			err = serr
		}
	}
	w.logs.release(w.id)
	if err != nil {
		return fmt.Errorf("close output of task %s: %w", w.id, err)
	}
	return nil
}

// refreshTail reads the tail back from the file, after bytes spliced in
// past it; call with w.mu held. A read that fails keeps the tail as it was.
func (w *Writer) refreshTail() {
	n := min(w.size, TailSize)
	b := make([]byte, n)
	if _, err := w.sf.ReadAt(b, w.size-n); err != nil {
		return
	}
	w.tail = ring{}
	w.tail.write(b)
	w.stale = false
}

// validTail makes the bytes of a window on the output valid UTF-8 for
// display, dropping the pieces of runes cut by the window's edges.
func validTail(b []byte) string {
	// Leading continuation bytes belong to a rune whose start fell outside
	// the window.
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	// A rune whose end has not been written yet.
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				b = b[:len(b)-i]
			}
			break
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// ring keeps the last TailSize bytes written. Its buffer is made at the
// first byte: most commands print little or nothing.
type ring struct {
	buf  []byte
	next int // where the next byte goes
	full bool
}

func (r *ring) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if r.buf == nil {
		r.buf = make([]byte, TailSize)
	}
	if len(p) >= len(r.buf) {
		copy(r.buf[:], p[len(p)-len(r.buf):])
		r.next, r.full = 0, true
		return
	}
	n := copy(r.buf[r.next:], p)
	if n < len(p) {
		copy(r.buf[:], p[n:])
		r.full = true
	}
	r.next = (r.next + len(p)) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

func (r *ring) len() int {
	if r.full {
		return len(r.buf)
	}
	return r.next
}

// last returns a copy of the last n bytes held (fewer when fewer are held).
func (r *ring) last(n int) []byte {
	n = max(0, min(n, r.len()))
	out := make([]byte, n)
	start := r.next - n
	if start >= 0 {
		copy(out, r.buf[start:r.next])
		return out
	}
	k := copy(out, r.buf[len(r.buf)+start:])
	copy(out[k:], r.buf[:r.next])
	return out
}

// WholeRunes returns b without a UTF-8 character cut off at its end, so a
// reader that turns chunks into strings never splits one; bytes that can
// never become a character are left for the reader to show as they are.
func WholeRunes(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b // ASCII: nothing is cut
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
