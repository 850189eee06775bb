package agentcli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// fakeMCP is testdata/fakemcp built for this run: the MCP client the fake
// claude uses to ask its questions.
var fakeMCP string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agentcli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fakeMCP = filepath.Join(dir, "fakemcp")
	// go test puts its own go first on PATH.
	build := exec.Command("go", "build", "-o", fakeMCP, "./testdata/fakemcp")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build testdata/fakemcp: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
