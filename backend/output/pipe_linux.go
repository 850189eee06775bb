package output

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is how much a command's output pipe holds once widened.
const pipeSize = 1 << 20

// widen makes r, when it is a pipe, hold pipeSize bytes (Linux's default
// is 64 KiB), so a command printing fast blocks, and wakes the reader,
// far less often. A pipe that cannot grow (past the user's limit on pipe
// memory) stays as it is, and r when it is no pipe is left alone.
func widen(r io.Reader) {
	f, ok := r.(*os.File)
	if !ok {
		return
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = sc.Control(func(fd uintptr) {
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
	})
}

// spliceChunk is the most one splice moves.
const spliceChunk = 1 << 20

// splice moves what the pipe r gives straight into the log's file, in the
// kernel (splice(2)), until the pipe ends: the bytes never pass through
// Conch, and followers are woken as they land. ok is false, with nothing
// moved, where it cannot be done (r is no pipe, the file system will not
// take it): the caller copies instead. The file is opened a second time,
// without O_APPEND (which splice refuses), and written at the log's size,
// which w.mu keeps.
func (w *Writer) splice(r io.Reader) (moved int64, ok bool, err error) {
	f, isFile := r.(*os.File)
	if !isFile {
		return 0, false, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	w.mu.Lock()
	if w.f == nil || w.closed {
		w.mu.Unlock()
		return 0, false, nil
	}
	if w.sf == nil {
		sf, err := os.OpenFile(w.path, os.O_RDWR, 0)
		if err != nil {
			w.mu.Unlock()
			return 0, false, nil
		}
		w.sf = sf
	}
	sc, err := w.sf.SyscallConn()
	w.mu.Unlock()
	if err != nil {
		return 0, false, nil
	}
	for {
		var n int64
		var serr error
		cerr := sc.Control(func(out uintptr) {
			err = rc.Read(func(in uintptr) bool {
				w.mu.Lock()
				defer w.mu.Unlock()
				if w.closed {
					serr = os.ErrClosed
					return true
				}
				off := w.size
				n, serr = unix.Splice(int(in), nil, int(out), &off, spliceChunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				if n > 0 {
					w.size += n
					w.stale = true
				}
				return !errors.Is(serr, unix.EAGAIN)
			})
		})
		if n > 0 {
			moved += n
			w.sig.notify()
		}
		switch {
		case cerr != nil:
			return moved, true, fmt.Errorf("write output of task %s: %w", w.id, cerr)
		case err != nil:
			return moved, true, err
		case errors.Is(serr, unix.EINTR):
		case serr != nil && moved == 0 && !errors.Is(serr, os.ErrClosed):
			return 0, false, nil // no splice here: copy
		case serr != nil:
			return moved, true, fmt.Errorf("write output of task %s: %w", w.id, serr)
		case n == 0:
			return moved, true, nil // the pipe ended
		}
	}
}
