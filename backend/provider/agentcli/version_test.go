package agentcli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"2.0.1", "2.1.197", true},
		{"2.1.197", "2.1.197", false},
		{"2.1.332 (Claude Code)", "2.1.197", false},
		{"codex-cli 0.99.0", "0.142.5", true},
		{"0.44.0", "0.9.9", false}, // numbers, not text
		{"0.44.0-preview.1", "0.44.0", false},
		{"unknown", "0.44.0", false},
	} {
		if got := versionLess(c.a, c.b); got != c.less {
			t.Errorf("versionLess(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func TestTooOldSaysHowToUpdate(t *testing.T) {
	want := "Claude Code 2.0.1 is older than 2.1.197, the oldest Conch works with; update it: npm install -g @anthropic-ai/claude-code"
	if got := claudeFloor.tooOld("2.0.1", ""); got != want {
		t.Errorf("got %q", got)
	}
	if got := claudeFloor.tooOld(claudeFloor.oldest, ""); got != "" {
		t.Errorf("at the floor: %q", got)
	}
	if got := claudeFloor.tooOld("", ""); got != "" {
		t.Errorf("unknown version: %q", got)
	}
}

// An npm install's version is read from the package's package.json
// beside the command, through the .bin link, without running it.
func TestCLIVersionReadsTheNpmPackage(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@google", "gemini-cli")
	must(t, os.MkdirAll(filepath.Join(pkg, "dist"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "node_modules", ".bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@google/gemini-cli","version":"0.44.0"}`), 0o644))
	// Not executable: reading it must not need running it.
	must(t, os.WriteFile(filepath.Join(pkg, "dist", "index.js"), []byte("#!/usr/bin/env node\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "package.json"), []byte(`{"name":"someone-else","version":"9.9.9"}`), 0o644))
	bin := filepath.Join(root, "node_modules", ".bin", "gemini")
	must(t, os.Symlink("../@google/gemini-cli/dist/index.js", bin))
	if v := cliVersion(context.Background(), Config{}, bin, geminiFloor.pkg); v != "0.44.0" {
		t.Errorf("version %q", v)
	}
	// The package.json above node_modules is the project's, not the CLI's.
	if v := packageVersion(filepath.Join(pkg, "dist", "index.js"), claudeFloor.pkg); v != "" {
		t.Errorf("another package's version %q", v)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
