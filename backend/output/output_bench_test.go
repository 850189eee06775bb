package output

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// benchChunk is the write size both benchmarks use, as a task's pipe would
// deliver under load.
const benchChunk = 64 << 10

// truncateEvery keeps the benchmark files small: every 64 MiB the file is
// emptied (off the clock), so a long run does not fill the disk.
const truncateEvery = 1024

// BenchmarkRawFileWrite is the physical limit: plain os.File.Write of 64 KiB
// chunks to an append-only file. BenchmarkWriterWrite is measured against it.
func BenchmarkRawFileWrite(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := bytes.Repeat([]byte("x"), benchChunk)
	b.SetBytes(benchChunk)
	for i := 0; b.Loop(); i++ {
		if i%truncateEvery == truncateEvery-1 {
			b.StopTimer()
			if err := f.Truncate(0); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := f.Write(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriterWrite writes the same chunks through a Writer, which adds a
// lock, the tail ring and the follower wake-up to each write.
func BenchmarkWriterWrite(b *testing.B) {
	l := New(b.TempDir())
	w, err := l.Open("bench")
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	p := bytes.Repeat([]byte("x"), benchChunk)
	if _, err := w.Write(p); err != nil { // makes the file
		b.Fatal(err)
	}
	b.SetBytes(benchChunk)
	for i := 0; b.Loop(); i++ {
		if i%truncateEvery == truncateEvery-1 {
			b.StopTimer()
			if err := w.f.Truncate(0); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := w.Write(p); err != nil {
			b.Fatal(err)
		}
	}
}
