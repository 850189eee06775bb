// Package conchserve starts a built conch binary's `conch serve` (or another
// command that prints the same sign-in line) for a test, on a free
// loopback port, and reads where it serves.
package conchserve

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Line is the sign-in line `conch serve` prints: its address and token.
var Line = regexp.MustCompile(`^conch: serving (http://127\.0\.0\.1:\d+)/#token=([0-9a-f]{64})$`)

// Served is a running conch and where it serves.
type Served struct {
	Cmd         *exec.Cmd
	Base, Token string
}

// Start runs bin with args (ending in the flags that pick the home and
// the address), env added to the test's environment when not nil, and
// waits up to 30 s for its sign-in line. The process is killed at the
// test's end.
func Start(t testing.TB, bin string, args, env []string) *Served {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case line := <-lines:
		m := Line.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("conch %v printed %q", args, line)
		}
		return &Served{Cmd: cmd, Base: m[1], Token: m[2]}
	case <-time.After(30 * time.Second):
		t.Fatalf("conch %v printed nothing", args)
	}
	return nil
}
