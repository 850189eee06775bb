//go:build unix

package xvfbtest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Display starts Xvfb and returns its display name (":N"); it stops when
// the test ends. Xvfb picks a free display number itself (-displayfd) and
// writes it once it accepts connections, so parallel runs never collide
// or race its start. tools are other commands the test needs, checked
// with Xvfb so a missing one says to run scripts/setup --test.
func Display(t testing.TB, tools ...string) string {
	t.Helper()
	for _, tool := range append([]string{"Xvfb"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: run scripts/setup --test", tool)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-noreset", "-screen", "0", "640x480x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		got <- strings.TrimSpace(line)
	}()
	select {
	case n := <-got:
		if n == "" {
			t.Fatal("Xvfb exited without a display")
		}
		return ":" + n
	case <-time.After(20 * time.Second):
		t.Fatal("Xvfb did not start")
	}
	return ""
}
