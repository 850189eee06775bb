package agentbin

import (
	"conch/backend/provider/agentcli"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// packages are the CLIs' npm packages.
var packages = map[string]string{Claude: "@anthropic-ai/claude-code", Codex: "@openai/codex", Gemini: "@google/gemini-cli"}

// pins reads the versions an install's package.json pins, by package.
func pins(t *testing.T, in Install) map[string]string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, in.Scripts(), "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	return pkg.Dependencies
}

// Each pinned CLI of both installs is there and runs: it prints the
// version its lock pins, so a stale install is caught here and not in a
// provider's test.
func TestTheCLIsRun(t *testing.T) {
	for _, in := range Installs {
		deps := pins(t, in)
		for name, p := range packages {
			want := deps[p]
			if want == "" {
				t.Fatalf("%s/package.json does not pin %s", in.Scripts(), p)
			}
			t.Run(string(in)+"/"+name, func(t *testing.T) {
				out, err := exec.Command(PathOf(t, in, name), "--version").CombinedOutput()
				if err != nil {
					t.Fatalf("%s --version: %v\n%s", name, err, out)
				}
				if !strings.Contains(string(out), want) {
					t.Fatalf("%s --version = %q, want %s (%s/package.json)", name, out, want, in.Scripts())
				}
			})
		}
	}
}

// The oldest install pins what the providers call the oldest they work
// with, and the newest is newer.
func TestTheOldestAreTheProvidersFloors(t *testing.T) {
	oldest, newest := pins(t, Oldest), pins(t, Newest)
	floors := agentcli.Floors()
	for _, p := range packages {
		if oldest[p] != floors[p] {
			t.Errorf("%s: scripts/agents/oldest pins %s, the provider's floor is %s", p, oldest[p], floors[p])
		}
		if oldest[p] == newest[p] {
			t.Errorf("%s: the oldest and the newest are both %s", p, oldest[p])
		}
	}
}

func TestSkipReasonReadsSetupsNote(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "node_modules", ".bin")
	t.Setenv("CONCH_SETUP_NO_AGENTS", "")
	if got := skipReason(bin); got != "" {
		t.Fatalf("no note: %q", got)
	}
	if err := os.WriteFile(filepath.Join(root, "unreachable"), []byte("npm could not reach the registry:\nnpm error code ENOTFOUND\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := skipReason(bin), "npm could not reach the registry: npm error code ENOTFOUND"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
