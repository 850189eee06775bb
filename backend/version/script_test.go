package version

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's top, where scripts/version and wails.json are.
const root = "../.."

// productVersion is wails.json's info.productVersion.
func productVersion(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "wails.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Info struct {
			ProductVersion string `json:"productVersion"`
		} `json:"info"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("wails.json: %v", err)
	}
	return w.Info.ProductVersion
}

func runVersion(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "scripts", "version"), args...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr)), err
	}
	return strings.TrimSpace(string(out)), err
}

// A version a .deb and an .rpm take: digits first, X.Y.Z, then an optional
// -pre and +build of letters, digits and dots.
var packageVersion = regexp.MustCompile(`^([0-9]+\.[0-9]+\.[0-9]+)(-[0-9A-Za-z.]+)?(\+[0-9A-Za-z.]+)?$`)

func TestScriptsVersionBuildsOnWailsJSONsNumber(t *testing.T) {
	base := productVersion(t, root)
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(base) {
		t.Fatalf("wails.json's productVersion %q is not X.Y.Z", base)
	}
	got, err := runVersion(t, root, "--base")
	if err != nil || got != base {
		t.Fatalf("scripts/version --base = %q, %v; wails.json says %s", got, err, base)
	}
	v, err := runVersion(t, root)
	if err != nil {
		t.Fatalf("scripts/version: %v: %s", err, v)
	}
	m := packageVersion.FindStringSubmatch(v)
	if m == nil || m[1] != base {
		t.Fatalf("scripts/version = %q: want %s, -pre or +build after it", v, base)
	}
}

func TestTheChangelogHasTheVersionsSection(t *testing.T) {
	base := productVersion(t, root)
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## [Unreleased]", "## [" + base + "] - "} {
		if !strings.Contains(string(b), "\n"+want) {
			t.Errorf("CHANGELOG.md has no %q heading (wails.json says %s)", want, base)
		}
	}
}

// repo makes a git repository holding scripts/version and a wails.json
// that says base, with one commit.
func repo(t *testing.T, base string) string {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(root, "scripts", "version"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "version"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	setBase(t, dir, base)
	git(t, dir, "init", "-q")
	commit(t, dir)
	return dir
}

func setBase(t *testing.T, dir, base string) {
	t.Helper()
	w := `{"name": "Conch", "info": {"productName": "Conch", "productVersion": "` + base + `"}}`
	if err := os.WriteFile(filepath.Join(dir, "wails.json"), []byte(w), 0o644); err != nil {
		t.Fatal(err)
	}
}

func commit(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "step")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestScriptsVersionFromTheTags(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := repo(t, "0.1.0")
	sha := func() string { return git(t, dir, "rev-parse", "--short=8", "HEAD") }
	want := func(what, v string) {
		t.Helper()
		got, err := runVersion(t, dir)
		if err != nil || got != v {
			t.Fatalf("%s: scripts/version = %q, %v; want %q", what, got, err, v)
		}
		if !packageVersion.MatchString(got) {
			t.Fatalf("%s: %q is no version a package takes", what, got)
		}
	}
	want("no tag", "0.1.0-dev+"+sha())

	git(t, dir, "tag", "v0.1.0")
	want("the release tag at HEAD", "0.1.0")

	commit(t, dir)
	commit(t, dir)
	want("two commits after the release", "0.1.0+2."+sha())

	setBase(t, dir, "0.2.0")
	commit(t, dir)
	want("wails.json bumped to the next one", "0.2.0-dev.3+"+sha())

	git(t, dir, "tag", "v0.3.0")
	if got, err := runVersion(t, dir); err == nil || !strings.Contains(got, "v0.3.0") || !strings.Contains(got, "0.2.0") {
		t.Fatalf("a tag that is not wails.json's number: scripts/version = %q, %v; want it refused, naming both", got, err)
	}
}
