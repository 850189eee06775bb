package agentbin

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each pinned CLI is installed and runs: it prints the version the lock
// pins, so a stale install is caught here and not in a provider's test.
func TestTheCLIsRun(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "scripts", "agents", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	packages := map[string]string{Claude: "@anthropic-ai/claude-code", Codex: "@openai/codex", Gemini: "@google/gemini-cli"}
	for name, p := range packages {
		want := pkg.Dependencies[p]
		if want == "" {
			t.Fatalf("scripts/agents/package.json does not pin %s", p)
		}
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(Path(t, name), "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --version: %v\n%s", name, err, out)
			}
			if !strings.Contains(string(out), want) {
				t.Fatalf("%s --version = %q, want %s (scripts/agents/package.json)", name, out, want)
			}
		})
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
