package agentcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Each CLI has a supported range: from the oldest version Conch works
// with (a floor, pinned for the tests in scripts/agents/oldest) to the
// newest it was tested with (scripts/agents). An older CLI speaks too
// little of what Conch relies on (stream-json fields, app-server methods,
// ACP flags), so it is not ready, and the reason says how to update it.

// cliFloor is one CLI's oldest supported version and how to update it.
type cliFloor struct {
	command string // its usual command name, "claude"
	product string // "Claude Code"
	pkg     string // its npm package
	oldest  string
}

// The floors; agentbin's test checks they match scripts/agents/oldest.
var (
	claudeFloor = cliFloor{command: "claude", product: "Claude Code", pkg: "@anthropic-ai/claude-code", oldest: "2.1.197"}
	codexFloor  = cliFloor{command: "codex", product: "Codex", pkg: "@openai/codex", oldest: "0.142.5"}
	geminiFloor = cliFloor{command: "gemini", product: "Gemini CLI", pkg: "@google/gemini-cli", oldest: "0.44.0"}
)

// Floors are the oldest version of each CLI Conch works with, by npm
// package, for the check that scripts/agents/oldest pins the same.
func Floors() map[string]string {
	out := map[string]string{}
	for _, f := range []cliFloor{claudeFloor, codexFloor, geminiFloor} {
		out[f.pkg] = f.oldest
	}
	return out
}

// tooOld is the reason a CLI at version v is not ready, or "" when v is
// at least the floor (oldest overrides it when set) or is unknown.
func (f cliFloor) tooOld(v, oldest string) string {
	if oldest == "" {
		oldest = f.oldest
	}
	if v == "" || !versionLess(v, oldest) {
		return ""
	}
	return fmt.Sprintf("%s %s is older than %s, the oldest Conch works with; update it: npm install -g %s", f.product, v, oldest, f.pkg)
}

// versionRe finds a dotted version in a CLI's --version output
// ("2.1.332 (Claude Code)", "codex-cli 0.171.0", "0.61.0").
var versionRe = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\b`)

// versionLess compares two dotted versions by their numbers; a
// pre-release suffix is ignored.
func versionLess(a, b string) bool {
	pa, pb := versionRe.FindStringSubmatch(a), versionRe.FindStringSubmatch(b)
	if pa == nil || pb == nil {
		return false
	}
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return false
}

// versions caches each binary's version by its resolved path, size and
// modification time: Info is asked often, an update changes the file.
var versions sync.Map // versionKey → string

type versionKey struct {
	path string
	size int64
	mod  time.Time
}

// cliVersion is the version of the CLI at bin, "" when it cannot tell.
// An npm install says it in the package.json beside the command, read
// without starting anything (Gemini CLI takes seconds to start); any
// other install is asked with --version.
func cliVersion(ctx context.Context, cfg Config, bin, pkg string) string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return ""
	}
	st, err := os.Stat(real)
	if err != nil {
		return ""
	}
	key := versionKey{real, st.Size(), st.ModTime()}
	if v, ok := versions.Load(key); ok {
		return v.(string)
	}
	v := packageVersion(real, pkg)
	if v == "" {
		code, out, ok := probe(ctx, cfg, bin, "--version")
		if !ok || code != 0 {
			return "" // not cached: it may answer next time
		}
		v = versionRe.FindString(out)
	}
	versions.Store(key, v)
	return v
}

// packageVersion reads the version of npm package pkg from the
// package.json of the folder above file that is that package's.
func packageVersion(file, pkg string) string {
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
			var p struct{ Name, Version string }
			if json.Unmarshal(b, &p) == nil && p.Name == pkg {
				return p.Version
			}
		}
		if up := filepath.Dir(dir); up == dir || strings.HasSuffix(dir, string(filepath.Separator)+"node_modules") {
			return ""
		}
	}
}
