// Package agentbin finds the real coding-agent CLIs that Conch's tests
// run: Claude Code, Codex and Gemini CLI, each at two versions: the
// newest Conch was tested with (pinned in scripts/agents, installed by
// scripts/setup --test into build/.cache/agents) and the oldest it works with
// (scripts/agents/oldest, into build/.cache/agents-oldest).
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

// Install is one set of the CLIs, at one end of the supported range.
type Install string

const (
	// Newest are the versions scripts/agents pins.
	Newest Install = "newest"
	// Oldest are the oldest versions Conch works with, pinned in
	// scripts/agents/oldest.
	Oldest Install = "oldest"
)

// Installs are both ends of the range, for tests that run at each.
var Installs = []Install{Newest, Oldest}

// Scripts is the folder in the module holding the install's
// package.json and package-lock.json.
func (in Install) Scripts() string {
	if in == Oldest {
		return filepath.Join("scripts", "agents", "oldest")
	}
	return filepath.Join("scripts", "agents")
}

// env names the variable that overrides the install's folder.
func (in Install) env() string {
	if in == Oldest {
		return "CONCH_AGENT_CLIS_OLDEST"
	}
	return "CONCH_AGENT_CLIS"
}

// cache is the folder under build/.cache that scripts/setup --test installs into.
func (in Install) cache() string {
	if in == Oldest {
		return "agents-oldest"
	}
	return "agents"
}

// Dir is the folder holding the newest CLIs' commands (see DirOf).
func Dir() (string, error) { return DirOf(Newest) }

// DirOf is the folder holding the install's commands: $CONCH_AGENT_CLIS
// (the oldest: $CONCH_AGENT_CLIS_OLDEST) when set, else
// build/.cache/agents/node_modules/.bin (agents-oldest) in the module.
func DirOf(in Install) (string, error) {
	if d := os.Getenv(in.env()); d != "" {
		return d, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "build", ".cache", in.cache(), "node_modules", ".bin"), nil
}

// Path is the command of the named CLI at its newest (see PathOf).
func Path(t testing.TB, name string) string {
	t.Helper()
	return PathOf(t, Newest, name)
}

// PathOf is the command of the named CLI in the install. Without one the
// test fails, saying how to install it, unless setup recorded that npm
// could not reach the registry or was told to skip the CLIs: then it
// skips, saying why.
func PathOf(t testing.TB, in Install, name string) string {
	t.Helper()
	dir, err := DirOf(in)
	if err != nil {
		t.Fatalf("agentbin: %v", err)
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if why := skipReason(dir); why != "" {
		t.Skipf("no %s CLI (%s): %s", name, in, why)
	}
	t.Fatalf("no %s CLI at %s: run scripts/setup --test (make setup-test), which installs the pinned CLIs (%s) from npm", name, bin, in.Scripts())
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
