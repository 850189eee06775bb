package output

import (
	"bytes"
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
	// The whole first 64 KiB is waiting before the first read.
	first := 64 << 10
	if _, err := pw.Write(want[:first]); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer pw.Close()
		_, _ = pw.Write(want[first:])
	}()
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
