package output

import (
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
