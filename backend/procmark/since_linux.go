package procmark

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// sinceRange is the most pid numbers SignalSince reads one by one; past
// it, listing every process costs less.
const sinceRange = 512

// Since is where the kernel's process counters stood before a command
// started: the last pid handed out and the processes made since boot.
// Every process the command makes gets a later pid, unless pid numbers
// wrapped around meanwhile, which the second counter rules out.
type Since struct {
	last  int
	forks uint64
	ok    bool
}

// Now reads the counters; take it before the command starts. The fork
// count is read first and the last pid after it (and the other way round
// in madeSince), so a process made between the two reads can only make
// the count look higher, never hide a wrap.
func Now() Since {
	forks, ok1 := forkCount()
	last, ok2 := lastPid()
	return Since{last: last, forks: forks, ok: ok1 && ok2}
}

// SignalSince is Signal for the processes made since s: it reads only
// their pids when the counters show that every process made meanwhile has
// a pid after s's, and few were made, else it looks at every process. It
// reports how many processes it reached.
func SignalSince(m Mark, s Since, sig syscall.Signal) int {
	pids, ok := madeSince(s)
	if !ok {
		return Signal(m, sig)
	}
	n := 0
	self := os.Getpid()
	for _, pid := range pids {
		if pid != self && carries(pid, m) && kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

// madeSince lists the pid numbers handed out since s, or says it cannot:
// the counters are unreadable, the numbers wrapped around (the last pid
// is below s's, or enough processes were made for a whole round), or too
// many were made to read one by one.
func madeSince(s Since) ([]int, bool) {
	if !s.ok {
		return nil, false
	}
	last, ok1 := lastPid()
	forks, ok2 := forkCount()
	limit, ok3 := pidMax()
	if !ok1 || !ok2 || !ok3 || last < s.last || last-s.last > sinceRange || forks < s.forks || forks-s.forks >= uint64(limit) {
		return nil, false
	}
	out := make([]int, 0, last-s.last)
	for pid := s.last + 1; pid <= last; pid++ {
		out = append(out, pid)
	}
	return out, true
}

// procBuf is what readProc reads into: /proc/stat is a few KiB, far more
// on a machine with many CPUs and interrupts.
var procBuf = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// readProc calls use with the whole of a /proc file, read into a pooled
// buffer (use must not keep it). A task reads a few of these as it starts
// and ends; plain system calls make it three calls each and no garbage,
// where os.ReadFile makes more and a new buffer each time.
func readProc[T any](path string, use func([]byte) (T, bool)) (T, bool) {
	var zero T
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return zero, false
	}
	defer syscall.Close(fd)
	bp := procBuf.Get().(*[]byte)
	defer procBuf.Put(bp)
	b := (*bp)[:0]
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return zero, false
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
	}
	*bp = b
	return use(b)
}

// lastPid is the last pid handed out in this pid namespace (the last field
// of /proc/loadavg).
func lastPid() (int, bool) { return readProc("/proc/loadavg", parseLastPid) }

func parseLastPid(b []byte) (int, bool) {
	f := bytes.Fields(b)
	if len(f) < 5 {
		return 0, false
	}
	n, err := strconv.Atoi(string(f[4]))
	return n, err == nil
}

// forkCount is how many processes (and threads) were made since boot (the
// "processes" line of /proc/stat).
func forkCount() (uint64, bool) { return readProc("/proc/stat", parseForkCount) }

func parseForkCount(b []byte) (uint64, bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("processes ")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// pidMax is the highest pid number plus one (/proc/sys/kernel/pid_max),
// read once: it is set as the machine boots.
var pidMax = sync.OnceValues(func() (int, bool) {
	return readProc("/proc/sys/kernel/pid_max", func(b []byte) (int, bool) {
		n, err := strconv.Atoi(string(bytes.TrimSpace(b)))
		return n, err == nil && n > 0
	})
})
