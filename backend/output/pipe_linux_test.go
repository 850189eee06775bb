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
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	size := func() int {
		n, err := unix.FcntlInt(pr.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := size(); n >= pipeSize {
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
	if got := size(); got != pipeSize {
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
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	before, err := unix.FcntlInt(pr.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write([]byte("ok\n")); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	if n, err := w.ReadFrom(pr); n != 3 || err != nil {
		t.Fatalf("copied %d bytes: %v", n, err)
	}
	after, err := unix.FcntlInt(pr.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("the pipe went from %d to %d bytes", before, after)
	}
}
