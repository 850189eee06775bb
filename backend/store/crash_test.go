package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// crashChildEnv names the database a re-executed test binary writes to
// until it is killed.
const crashChildEnv = "CONCH_STORE_CRASH_CHILD"

// TestCrashKeepsAcknowledgedWrites runs writers in a child process, kills it
// with SIGKILL in the middle of writing, and checks that the database opens
// and holds every write the child saw acknowledged.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "conch.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashKeepsAcknowledgedWrites$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for len(acked) < 300 && sc.Scan() {
		acked = append(acked, sc.Text())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Acknowledgements already in the pipe when it died count too.
	for sc.Scan() {
		acked = append(acked, sc.Text())
	}
	cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("child acknowledged only %d writes", len(acked))
	}

	s, err := Open(path)
	if err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	defer s.Close()
	for _, id := range acked {
		if _, err := s.Task(id); err != nil {
			t.Fatalf("acknowledged write lost in crash: %v", err)
		}
	}
	if ts, err := s.Tasks(); err != nil || len(ts) < len(acked) {
		t.Fatalf("after crash: %d tasks, %v; want at least %d", len(ts), err, len(acked))
	}
}

// crashChild writes from several goroutines forever, printing each id once
// its PutTask has returned.
func crashChild(path string) {
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("g%d-%06d", g, i)
				if err := s.PutTask(newTask(id, time.Now())); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintln(w, id)
				w.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
