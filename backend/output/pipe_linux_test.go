package output

import (
	"bytes"
	"context"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A command printing faster than the pipe drains fills the first read:
// the rest comes through a pipe widened to pipeSize, whole and in order.
func TestReadFromWidensTheFastPipe(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "fast")
	pr, pw := newPipe(t)
	if n := holds(t, pr); n >= pipeSize {
		t.Fatalf("a new pipe already holds %d bytes", n)
	}
	want := make([]byte, 3<<20)
	for i := range want {
		want[i] = byte(i*7 + i/4096)
	}
	fast(t, pw, want)
	n, err := w.ReadFrom(pr)
	if err != nil {
		t.Fatal(err)
	}
	if got := holds(t, pr); got != pipeSize {
		t.Fatalf("the pipe holds %d bytes, want %d", got, pipeSize)
	}
	got, _, err := l.ReadAt("fast", 0, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(want)) || !bytes.Equal(got, want) || w.Size() != n {
		t.Fatalf("copied %d of %d bytes; log %d bytes, equal %t", n, len(want), len(got), bytes.Equal(got, want))
	}
}

// A command that prints a little keeps the pipe it was given.
func TestReadFromLeavesAQuietPipe(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "quiet")
	pr, pw := newPipe(t)
	before := holds(t, pr)
	if _, err := pw.Write([]byte("ok\n")); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	if n, err := w.ReadFrom(pr); n != 3 || err != nil {
		t.Fatalf("copied %d bytes: %v", n, err)
	}
	if after := holds(t, pr); after != before {
		t.Fatalf("the pipe went from %d to %d bytes", before, after)
	}
}

func newPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.Close()
		_ = w.Close()
	})
	return r, w
}

// holds says how many bytes the pipe p holds.
func holds(t *testing.T, p *os.File) int {
	t.Helper()
	n, err := unix.FcntlInt(p.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A fast pipe is moved into the file in the kernel: every byte lands in
// order, the size and the tail (read back from the file) are right, a
// follower sees it all, and Conch's own line after it lands after it.
func TestAFastPipeIsSplicedWhole(t *testing.T) {
	l := newTest(t)
	w := openW(t, l, "spliced")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := l.Follow(ctx, "spliced", 0)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := newPipe(t)
	want := make([]byte, 3<<20)
	for i := range want {
		want[i] = 'a' + byte(i%26)
	}
	fast(t, pw, want)
	n, err := w.ReadFrom(pr)
	if err != nil {
		t.Fatal(err)
	}
	if w.sf == nil {
		t.Fatal("the fast pipe was copied, not spliced")
	}
	if n != int64(len(want)) || w.Size() != n {
		t.Fatalf("moved %d of %d bytes, size %d", n, len(want), w.Size())
	}
	if tail := w.Tail(100); tail != string(want[len(want)-100:]) {
		t.Fatalf("tail %q", tail)
	}
	if _, err := w.Write([]byte("\nend\n")); err != nil {
		t.Fatal(err)
	}
	all := append(append([]byte{}, want...), "\nend\n"...)
	got, _, err := l.ReadAt("spliced", 0, 4<<20)
	if err != nil || !bytes.Equal(got, all) {
		t.Fatalf("log %d bytes (want %d), equal %t, %v", len(got), len(all), bytes.Equal(got, all), err)
	}
	if tail := w.Tail(5); tail != "\nend\n" {
		t.Fatalf("tail after a write %q", tail)
	}
	var followed []byte
	for len(followed) < len(all) {
		followed = append(followed, <-ch...)
	}
	if !bytes.Equal(followed, all) {
		t.Fatal("the follower saw other bytes")
	}
}

// fast writes want into the pipe as a command printing faster than it
// drains would: its first 64 KiB waiting before the first read, the rest
// after, then the pipe closed.
func fast(t *testing.T, pw *os.File, want []byte) {
	t.Helper()
	first := 64 << 10
	if _, err := pw.Write(want[:first]); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer pw.Close()
		_, _ = pw.Write(want[first:])
	}()
}
