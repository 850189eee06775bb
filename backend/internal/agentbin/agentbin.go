// Package agentbin finds the real coding-agent CLIs that Conch's tests
// run: Claude Code, Codex and Gemini CLI, pinned in scripts/agents and
// installed by scripts/setup into build/.cache/agents.
package agentbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Names are the CLIs' commands.
const (
	Claude = "claude"
	Codex  = "codex"
	Gemini = "gemini"
)

// Dir is the folder holding the installed CLIs' commands: $CONCH_AGENT_CLIS
// when set, else build/.cache/agents/node_modules/.bin in the module.
func Dir() (string, error) {
	if d := os.Getenv("CONCH_AGENT_CLIS"); d != "" {
		return d, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "build", ".cache", "agents", "node_modules", ".bin"), nil
}

// Path is the command of the named CLI. Without one the test fails, saying
// how to install it, unless setup recorded that npm could not reach the
// registry or was told to skip the CLIs: then it skips, saying why.
func Path(t testing.TB, name string) string {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatalf("agentbin: %v", err)
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if why := skipReason(dir); why != "" {
		t.Skipf("no %s CLI: %s", name, why)
	}
	t.Fatalf("no %s CLI at %s: run scripts/setup (make setup), which installs the pinned CLIs from npm", name, bin)
	return ""
}

// skipReason says why the CLIs may be missing, or "" if they should be there.
func skipReason(dir string) string {
	if os.Getenv("CONCH_SETUP_NO_AGENTS") != "" {
		return "CONCH_SETUP_NO_AGENTS is set"
	}
	// dir is …/agents/node_modules/.bin; setup's note is in …/agents.
	b, err := os.ReadFile(filepath.Join(dir, "..", "..", "unreachable"))
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod above the working folder")
		}
		dir = up
	}
}
