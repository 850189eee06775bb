//go:build unix

package gemini

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is what /proc says of one process.
type proc struct {
	PID, PPID, PGRP, SID int
	Comm                 string
	Cmdline              []string
	Env                  map[string]string
}

func (p proc) String() string {
	return fmt.Sprintf("pid=%d ppid=%d pgrp=%d sid=%d %q", p.PID, p.PPID, p.PGRP, p.SID, strings.Join(p.Cmdline, " "))
}

// readProc reads /proc/<pid>/{stat,cmdline,environ}.
func readProc(pid int) (proc, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid pgrp session ...; comm may hold spaces.
	s := string(stat)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < 0 {
		return proc{}, false
	}
	f := strings.Fields(s[close+1:])
	if len(f) < 4 || f[0] == "Z" {
		return proc{}, false // gone, or a zombie
	}
	p := proc{PID: pid, Comm: s[open+1 : close], Env: map[string]string{}}
	p.PPID, _ = strconv.Atoi(f[1])
	p.PGRP, _ = strconv.Atoi(f[2])
	p.SID, _ = strconv.Atoi(f[3])
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		for _, a := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
			p.Cmdline = append(p.Cmdline, string(a))
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
		for _, kv := range bytes.Split(b, []byte{0}) {
			if k, v, ok := strings.Cut(string(kv), "="); ok {
				p.Env[k] = v
			}
		}
	}
	return p, true
}

func allProcs() []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// descendants are the live processes under root (by parent pid), root
// first.
func descendants(root int) []proc {
	ps := allProcs()
	children := map[int][]proc{}
	var top proc
	for _, p := range ps {
		children[p.PPID] = append(children[p.PPID], p)
		if p.PID == root {
			top = p
		}
	}
	if top.PID == 0 {
		return nil
	}
	out := []proc{top}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].PID]...)
	}
	return out
}

// withEnv are the live processes whose environment has key=value.
func withEnv(key, value string) []proc {
	var out []proc
	for _, p := range allProcs() {
		if p.Env[key] == value {
			out = append(out, p)
		}
	}
	return out
}

func alive(pid int) bool {
	_, ok := readProc(pid)
	return ok
}

// waitProc polls until find gives a process, up to timeout.
func waitProc(timeout time.Duration, find func() (proc, bool)) (proc, bool) {
	deadline := time.Now().Add(timeout)
	for {
		if p, ok := find(); ok {
			return p, true
		}
		if time.Now().After(deadline) {
			return proc{}, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitGone polls until pid is gone, up to timeout.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// killMarked SIGKILLs, at the end of the test, every process left with
// key=value in its environment (the test's own marker): what the CLI
// started and left behind.
func killMarked(t *testing.T, key, value string) {
	t.Cleanup(func() {
		for _, p := range withEnv(key, value) {
			if p.PID == os.Getpid() {
				continue
			}
			t.Logf("killing leftover %s", p)
			syscall.Kill(p.PID, syscall.SIGKILL)
		}
	})
}
