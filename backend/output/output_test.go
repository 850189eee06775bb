package output

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func newTest(t *testing.T) *Logs {
	t.Helper()
	return New(filepath.Join(t.TempDir(), "tasks"))
}

func openW(t *testing.T, l *Logs, id string) *Writer {
	t.Helper()
	w, err := l.Open(id)
	if err != nil {
		t.Fatalf("Open(%s): %v", id, err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func write(t *testing.T, w *Writer, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func TestPathLayout(t *testing.T) {
	l := New("/home/me/tasks")
	if got, want := l.Path("abc"), filepath.Join("/home/me/tasks", "abc", "output.log"); got != want {
		t.Fatalf("Path = %s, want %s", got, want)
	}
}

func TestReadAtOffsets(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "t1")
	write(t, w, "hello world")

	tests := []struct {
		name     string
		offset   int64
		max      int
		want     string
		wantNext int64
	}{
		{"from start", 0, 5, "hello", 5},
		{"middle", 6, 100, "world", 11},
		{"middle, short max", 4, 3, "o w", 7},
		{"at end", 11, 10, "", 11},
		{"past end is clamped to the end", 100, 10, "", 11},
		{"max zero means default", 0, 0, "hello world", 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, next, err := l.ReadAt("t1", tt.offset, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want || next != tt.wantNext {
				t.Fatalf("ReadAt(%d, %d) = %q, %d; want %q, %d", tt.offset, tt.max, b, next, tt.want, tt.wantNext)
			}
		})
	}

	if _, _, err := l.ReadAt("t1", -1, 10); err == nil {
		t.Error("negative offset: no error")
	}
	if _, _, err := l.ReadAt("nobody", 0, 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unknown id: err = %v, want os.ErrNotExist", err)
	}
}

func TestSize(t *testing.T) {
	l := newTest(t)
	if n, err := l.Size("nobody"); n != 0 || err != nil {
		t.Fatalf("Size of missing log = %d, %v; want 0, nil", n, err)
	}
	w := openW(t, l, "t1")
	if w.Size() != 0 {
		t.Fatalf("new Writer Size = %d", w.Size())
	}
	write(t, w, "12345")
	if n, err := l.Size("t1"); n != 5 || err != nil {
		t.Fatalf("Size = %d, %v; want 5", n, err)
	}
	if w.Size() != 5 {
		t.Fatalf("Writer Size = %d, want 5", w.Size())
	}
}

func TestInvalidIDsRefused(t *testing.T) {
	l := newTest(t)
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a\x00b"} {
		if _, err := l.Open(id); err == nil {
			t.Errorf("Open(%q) succeeded", id)
		}
		if _, _, err := l.ReadAt(id, 0, 1); err == nil {
			t.Errorf("ReadAt(%q) succeeded", id)
		}
		if _, err := l.Size(id); err == nil {
			t.Errorf("Size(%q) succeeded", id)
		}
		if err := l.Remove(id); err == nil {
			t.Errorf("Remove(%q) succeeded", id)
		}
		if _, err := l.Follow(t.Context(), id, 0); err == nil {
			t.Errorf("Follow(%q) succeeded", id)
		}
	}
}

func TestReopenAppends(t *testing.T) {
	l := newTest(t)
	w, err := l.Open("t1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, "first try\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Write([]byte("late")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close: err = %v, want os.ErrClosed", err)
	}

	w2 := openW(t, l, "t1")
	if w2.Size() != 10 {
		t.Fatalf("reopened Writer Size = %d, want 10", w2.Size())
	}
	write(t, w2, "retry\n")
	b, next, err := l.ReadAt("t1", 0, 1000)
	if err != nil || string(b) != "first try\nretry\n" || next != 16 {
		t.Fatalf("ReadAt = %q, %d, %v", b, next, err)
	}
}

func TestRemove(t *testing.T) {
	l := newTest(t)
	w, _ := l.Open("t1")
	write(t, w, "x")
	w.Close()
	if err := l.Remove("t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(l.Path("t1"))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory still there: %v", err)
	}
	if err := l.Remove("t1"); err != nil {
		t.Fatalf("Remove of a removed log: %v", err)
	}
}

// TestConcurrentWriters checks that concurrent Writes never interleave and
// that each writer's lines stay in its order.
func TestConcurrentWriters(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "t1")
	const writers, lines = 8, 500
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				line := fmt.Sprintf("writer %d line %04d %s\n", g, i, strings.Repeat("x", g*10))
				if _, err := w.Write([]byte(line)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	b, _, err := l.ReadAt("t1", 0, 10<<20)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != w.Size() {
		t.Fatalf("file has %d bytes, Writer.Size says %d", len(b), w.Size())
	}
	next := make([]int, writers)
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		f := strings.Split(line, " ")
		if len(f) != 5 || f[0] != "writer" || f[2] != "line" {
			t.Fatalf("mangled line %q", line)
		}
		g, err1 := strconv.Atoi(f[1])
		i, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || g < 0 || g >= writers {
			t.Fatalf("mangled line %q", line)
		}
		if i != next[g] || len(f[4]) != g*10 {
			t.Fatalf("line %q out of order or mangled (want line %d)", line, next[g])
		}
		next[g]++
	}
	for g, n := range next {
		if n != lines {
			t.Fatalf("writer %d: %d lines, want %d", g, n, lines)
		}
	}
}

// collect reads from ch until it holds want bytes or timeout passes.
func collect(t *testing.T, ch <-chan []byte, want int, timeout time.Duration) string {
	t.Helper()
	var got bytes.Buffer
	deadline := time.After(timeout)
	for got.Len() < want {
		select {
		case b, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %q", got.String())
			}
			got.Write(b)
		case <-deadline:
			t.Fatalf("after %v got %q (%d of %d bytes)", timeout, got.String(), got.Len(), want)
		}
	}
	return got.String()
}

// waitClosed drains ch until it is closed.
func waitClosed(t *testing.T, ch <-chan []byte) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("Follow's channel not closed after cancel")
		}
	}
}

// TestFollowLiveAppends turns polling off, so everything the follower sees
// after the first read comes from the Writer's wake-ups.
func TestFollowLiveAppends(t *testing.T) {
	l := newTest(t)
	l.poll = time.Hour
	w := openW(t, l, "t1")
	write(t, w, "before\n")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := l.Follow(ctx, "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, ch, 7, 5*time.Second); got != "before\n" {
		t.Fatalf("first read = %q", got)
	}
	var want strings.Builder
	for i := range 50 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		write(t, w, line)
		if i%10 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if got := collect(t, ch, want.Len(), 5*time.Second); got != want.String() {
		t.Fatalf("followed %q\nwant %q", got, want.String())
	}
	cancel()
	waitClosed(t, ch)
}

func TestFollowFromOffset(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "t1")
	write(t, w, "0123456789")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := l.Follow(ctx, "t1", 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, ch, 6, 5*time.Second); got != "456789" {
		t.Fatalf("followed %q", got)
	}
	if _, err := l.Follow(ctx, "t1", -1); err == nil {
		t.Fatal("Follow from a negative offset: no error")
	}
}

// TestFollowOtherProcess appends through a file descriptor of its own, as
// another process would: no wake-up, so polling must find it.
func TestFollowOtherProcess(t *testing.T) {
	l := newTest(t)
	l.poll = 20 * time.Millisecond
	// Follow before the log exists: the task has not written yet.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := l.Follow(ctx, "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(l.Path("t1")), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(l.Path("t1"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("from elsewhere\n"); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, ch, 15, 5*time.Second); got != "from elsewhere\n" {
		t.Fatalf("followed %q", got)
	}
	if _, err := f.WriteString("more\n"); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, ch, 5, 5*time.Second); got != "more\n" {
		t.Fatalf("followed %q", got)
	}
	cancel()
	waitClosed(t, ch)
}

// TestFollowDefaultPollSeesOtherProcess uses the real interval.
func TestFollowDefaultPollSeesOtherProcess(t *testing.T) {
	l := newTest(t)
	openW(t, l, "t1") // makes nothing until it writes
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := l.Follow(ctx, "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(l.Path("t1")), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Path("t1"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, ch, 7, 4*PollInterval); got != "outside" {
		t.Fatalf("followed %q", got)
	}
}

// TestFollowStopsWithoutLeaks starts many followers, cancels them, and
// checks their goroutines and wake-up signals are gone.
func TestFollowStopsWithoutLeaks(t *testing.T) {
	l := newTest(t)
	w, err := l.Open("t1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, "data")
	before := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(t.Context())
	var chans []<-chan []byte
	for range 20 {
		ch, err := l.Follow(ctx, "t1", 0)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	// Leave some followers blocked on a full channel: cancel must end them too.
	write(t, w, strings.Repeat("y", 5*chunkSize))
	cancel()
	for _, ch := range chans {
		waitClosed(t, ch)
	}
	w.Close()

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.mu.Lock()
	n := len(l.signals)
	l.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d signals left after every user went away", n)
	}
}

func TestTailBounded(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "t1")
	if got := w.Tail(10); got != "" {
		t.Fatalf("Tail of nothing = %q", got)
	}
	write(t, w, "abc")
	if got := w.Tail(10); got != "abc" {
		t.Fatalf("Tail(10) = %q", got)
	}
	if got := w.Tail(2); got != "bc" {
		t.Fatalf("Tail(2) = %q", got)
	}
	if got := w.Tail(-1); got != "" {
		t.Fatalf("Tail(-1) = %q", got)
	}
	big := strings.Repeat("0123456789", 10_000)
	write(t, w, big)
	if got := w.Tail(1 << 20); len(got) != TailSize || !strings.HasSuffix(big, got) {
		t.Fatalf("Tail(1 MiB) has %d bytes, want the last %d", len(got), TailSize)
	}
}

// TestTailMatchesWrites compares the ring with the whole output under random
// write sizes, including writes that wrap and writes larger than the ring.
func TestTailMatchesWrites(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "t1")
	rng := rand.New(rand.NewPCG(1, 2))
	var all []byte
	for i := range 300 {
		size := rng.IntN(3000)
		if i%50 == 0 {
			size = TailSize + rng.IntN(100)
		}
		p := make([]byte, size)
		for j := range p {
			p[j] = 'a' + byte(rng.IntN(26))
		}
		all = append(all, p...)
		write(t, w, string(p))
		n := rng.IntN(TailSize + 10)
		want := all[max(0, len(all)-min(n, TailSize)):]
		if got := w.Tail(n); got != string(want) {
			t.Fatalf("write %d: Tail(%d) differs from the last bytes written", i, n)
		}
	}
}

func TestTailUTF8(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "t1")
	const s = "aé€😀z" // runes of 1, 2, 3, 4 and 1 bytes
	write(t, w, s)
	for n := 0; n <= len(s); n++ {
		got := w.Tail(n)
		if !utf8.ValidString(got) || !strings.HasSuffix(s, got) || len(got) > n {
			t.Errorf("Tail(%d) = %q: not a valid UTF-8 suffix of at most %d bytes", n, got, n)
		}
		if n > 0 && len(got) < n-3 {
			t.Errorf("Tail(%d) = %q dropped more than a cut rune", n, got)
		}
	}

	// A rune split across two writes: its first half is not shown yet.
	w2 := openW(t, l, "t2")
	euro := []byte("€")
	write(t, w2, "x"+string(euro[:2]))
	if got := w2.Tail(10); got != "x" {
		t.Fatalf("Tail with a half-written rune = %q, want %q", got, "x")
	}
	write(t, w2, string(euro[2:]))
	if got := w2.Tail(10); got != "x€" {
		t.Fatalf("Tail after the rune completes = %q", got)
	}

	// Output that is not text still gives valid UTF-8.
	w3 := openW(t, l, "t3")
	write(t, w3, "ok\xff\xfe!")
	if got := w3.Tail(10); !utf8.ValidString(got) || !strings.HasPrefix(got, "ok") || !strings.HasSuffix(got, "!") {
		t.Fatalf("Tail of binary output = %q", got)
	}
}

// TestLargeOutputKeepsHeapFlat writes 200 MB through a Writer while a
// follower streams all of it, and checks that neither keeps it in memory.
func TestLargeOutputKeepsHeapFlat(t *testing.T) {
	const total, chunk = 200 << 20, 64 << 10
	l := newTest(t)
	w := openW(t, l, "big")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := l.Follow(ctx, "big", 0)
	if err != nil {
		t.Fatal(err)
	}
	followed := make(chan int64)
	go func() {
		var n int64
		for b := range ch {
			n += int64(len(b))
			if n == total {
				followed <- n
			}
		}
	}()

	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	p := bytes.Repeat([]byte("0123456789abcdef"), chunk/16)
	for written := 0; written < total; written += chunk {
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-followed:
	case <-time.After(60 * time.Second):
		t.Fatal("follower did not see all 200 MB")
	}
	// Writer and follower are both still live: whatever they hold counts.
	after := heap()
	if w.Size() != total {
		t.Fatalf("Size = %d, want %d", w.Size(), total)
	}
	if n, _ := l.Size("big"); n != total {
		t.Fatalf("file size = %d, want %d", n, total)
	}
	const slack = 8 << 20
	t.Logf("heap before %d KiB, after %d KiB", before>>10, after>>10)
	if after > before+slack {
		t.Fatalf("heap grew from %d to %d bytes writing %d bytes", before, after, total)
	}
}

func TestWholeRunesKeepsCharactersWhole(t *testing.T) {
	e := []byte("aé€😀")
	cases := []struct {
		in   []byte
		want int
	}{
		{e, len(e)},
		{e[:len(e)-1], len(e) - 4},
		{e[:len(e)-2], len(e) - 4},
		{e[:len(e)-3], len(e) - 4},
		{e[:2], 1},
		{[]byte{}, 0},
		{[]byte{0xff}, 1},
		{[]byte("ab"), 2},
	}
	for _, c := range cases {
		if got := len(WholeRunes(c.in)); got != c.want {
			t.Errorf("WholeRunes(%q) kept %d bytes, want %d", c.in, got, c.want)
		}
	}
}

// A command that prints nothing leaves no folder and no file; the first
// byte makes them, and a writer opened again appends to what is there.
func TestALogIsMadeAtItsFirstByte(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "quiet")
	if _, err := w.Write(nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(l.Path("quiet"))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a writer that wrote nothing left %v", err)
	}
	if b, _, err := l.ReadAt("quiet", 0, 10); !errors.Is(err, os.ErrNotExist) || len(b) != 0 {
		t.Fatalf("reading the quiet log: %q %v", b, err)
	}
	w = openW(t, l, "quiet")
	write(t, w, "first\n")
	w.Close()
	w = openW(t, l, "quiet")
	if w.Size() != 6 {
		t.Fatalf("opened again, size %d", w.Size())
	}
	write(t, w, "again\n")
	w.Close()
	if b, _, err := l.ReadAt("quiet", 0, 100); err != nil || string(b) != "first\nagain\n" {
		t.Fatalf("log %q %v", b, err)
	}
}

// A command's output pipe is copied in through ReadFrom: everything lands,
// in order, with the tail kept, from a pipe written in pieces of every
// size; a writer that got no byte holds no tail buffer.
func TestReadFromTakesAWholePipe(t *testing.T) {
	l := newTest(t)
	quiet := openW(t, l, "quiet")
	if n, err := quiet.ReadFrom(strings.NewReader("")); n != 0 || err != nil || quiet.tail.buf != nil {
		t.Fatalf("an empty pipe: %d %v, tail buffer %d bytes", n, err, len(quiet.tail.buf))
	}
	w := openW(t, l, "loud")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	var pieces [][]byte
	for i := range 2000 {
		piece := bytes.Repeat([]byte{byte('a' + i%26)}, 1+i*7%300)
		want.Write(piece)
		pieces = append(pieces, piece)
	}
	go func() {
		defer pw.Close()
		for _, piece := range pieces {
			if _, err := pw.Write(piece); err != nil {
				return
			}
		}
	}()
	n, err := w.ReadFrom(pr)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := l.ReadAt("loud", 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(want.Len()) || !bytes.Equal(got, want.Bytes()) || w.Size() != n {
		t.Fatalf("copied %d of %d bytes; log %d bytes, size %d", n, want.Len(), len(got), w.Size())
	}
	if tail := w.Tail(100); tail != string(want.Bytes()[want.Len()-100:]) {
		t.Fatalf("tail %q", tail)
	}
}
