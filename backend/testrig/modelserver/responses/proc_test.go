//go:build unix

package responses

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is what /proc says of one process.
type proc struct {
	PID, PPID, PGID, SID int
	Cmdline              string
	Env                  map[string]string
}

func readProc(pid int) (proc, bool) {
	p := proc{PID: pid}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return p, false
	}
	// pid (comm) state ppid pgrp session ...
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return p, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 4 || f[0] == "Z" {
		return p, false // gone, or a zombie
	}
	p.PPID, _ = strconv.Atoi(f[1])
	p.PGID, _ = strconv.Atoi(f[2])
	p.SID, _ = strconv.Atoi(f[3])
	cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	p.Cmdline = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	p.Env = map[string]string{}
	for _, kv := range strings.Split(string(env), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			p.Env[k] = v
		}
	}
	return p, true
}

// findProcs are the live processes whose command line contains s.
func findProcs(s string) []proc {
	var out []proc
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		if p, ok := readProc(pid); ok && strings.Contains(p.Cmdline, s) {
			out = append(out, p)
		}
	}
	return out
}

// waitProcs waits up to d for a process whose command line is exactly
// cmdline, or contains it when exact is false.
func waitProcs(t *testing.T, cmdline string, d time.Duration) []proc {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var out []proc
		for _, p := range findProcs(cmdline) {
			if p.Cmdline == cmdline {
				out = append(out, p)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func alive(pid int) bool {
	_, ok := readProc(pid)
	return ok
}

// ancestry is the chain of parents of pid, nearest first, as
// "pid:cmdline[sid=…,pgid=…]".
func ancestry(pid int) []string {
	var out []string
	for i := 0; i < 10 && pid > 1; i++ {
		p, ok := readProc(pid)
		if !ok {
			break
		}
		c := p.Cmdline
		if len(c) > 80 {
			c = c[:80] + "…"
		}
		out = append(out, strconv.Itoa(p.PID)+":"+c+"[sid="+strconv.Itoa(p.SID)+",pgid="+strconv.Itoa(p.PGID)+"]")
		pid = p.PPID
	}
	return out
}

// killLater kills pid when the test ends, if it is still there.
func killLater(t *testing.T, pid int) {
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}
