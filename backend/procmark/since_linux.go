package procmark

import (
	"bytes"
	"os"
	"strconv"
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

// Now reads the counters; take it before the command starts.
func Now() Since {
	last, ok1 := lastPid()
	forks, ok2 := forkCount()
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

// lastPid is the last pid handed out in this pid namespace (the last field
// of /proc/loadavg).
func lastPid() (int, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 5 {
		return 0, false
	}
	n, err := strconv.Atoi(string(f[4]))
	return n, err == nil
}

// forkCount is how many processes (and threads) were made since boot (the
// "processes" line of /proc/stat).
func forkCount() (uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("processes ")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// pidMax is the highest pid number plus one (/proc/sys/kernel/pid_max).
func pidMax() (int, bool) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	return n, err == nil && n > 0
}
