package layers_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestTheMapNamesEveryPackage keeps docs/ARCHITECTURE.md true: each package
// of the module is named in the tables of its Layers section, by its path
// under backend/ (`conch` for the module's root).
func TestTheMapNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := tableNames(string(doc), "## Layers")
	if len(named) == 0 {
		t.Fatal("docs/ARCHITECTURE.md has no table under ## Layers")
	}
	var missing []string
	for _, p := range list(t) {
		name := strings.TrimPrefix(p.ImportPath, "conch/backend/")
		if !named[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("docs/ARCHITECTURE.md does not name %s: add it to a floor's row under ## Layers, with a word on its job", m)
	}
}

func TestTableNames(t *testing.T) {
	doc := "# x\n\n| `a` |\n\n## Layers\n\ntext `b`\n\n| 0 | `c`, `d/{e,f}` (`g`) | `h` |\n\n## Next\n\n| `i` |\n"
	var got []string
	for n := range tableNames(doc, "## Layers") {
		got = append(got, n)
	}
	sort.Strings(got)
	if want := "c d/e d/f g h"; strings.Join(got, " ") != want {
		t.Errorf("tableNames = %q, want %q", got, want)
	}
}

var (
	quoted = regexp.MustCompile("`([^`]+)`")
	braces = regexp.MustCompile(`^(.*)\{([^{}]*)\}(.*)$`)
)

// tableNames is every `quoted` name in the table rows of the section that
// heading starts, with a{b,c} read as ab and ac.
func tableNames(doc, heading string) map[string]bool {
	names := map[string]bool{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.TrimSpace(line) == heading
		case in && strings.HasPrefix(line, "|"):
			for _, m := range quoted.FindAllStringSubmatch(line, -1) {
				for _, n := range expand(m[1]) {
					names[n] = true
				}
			}
		}
	}
	return names
}

func expand(s string) []string {
	m := braces.FindStringSubmatch(s)
	if m == nil {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(m[2], ",") {
		out = append(out, expand(m[1]+strings.TrimSpace(alt)+m[3])...)
	}
	return out
}
