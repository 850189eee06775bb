package layers_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// floors places every package of the module. A package may import only
// packages on a lower floor. A new package must be given a floor here.
var floors = map[string]int{
	// 0: records and tools with no Conch imports at all.
	"conch/backend/ask":                                 0,
	"conch/backend/errcode":                             0,
	"conch/backend/pref":                                0,
	"conch/backend/procmark":                            0,
	"conch/backend/output":                              0,
	"conch/backend/internal/procgroup":                  0,
	"conch/backend/internal/brief":                      0,
	"conch/backend/internal/proctree":                   1,
	"conch/backend/internal/sessionbus":                 0,
	"conch/backend/testrig/dbustest":                    0,
	"conch/backend/testrig/secrettest":                  1,
	"conch/backend/testrig/xvfbtest":                    0,
	"conch/backend/testrig/conchserve":                  0,
	"conch/backend/testrig/sshd":                        0,
	"conch/backend/remote/ssh":                          1,
	"conch/backend/remote":                              0,
	"conch/backend/host":                                4,
	"conch/backend/internal/layers":                     0,
	"conch/backend/shortcut":                            0,
	"conch/backend/integration":                         0,
	"conch/backend/testrig/agentbin":                    0,
	"conch/backend/testrig/modelserver":                 0,
	"conch/backend/testrig/modelserver/anthropic":       1,
	"conch/backend/testrig/modelserver/responses":       1,
	"conch/backend/testrig/modelserver/gemini":          1,
	"conch/backend/testrig/modelserver/chatcompletions": 1,
	"conch/backend/internal/lru":                        0,
	"conch/backend/internal/refcache":                   1,
	"conch/backend/startstop":                           0,
	"conch/backend/version":                             0,
	"conch/backend/internal/quantity":                   0,
	"conch/backend/testrig/agentrig":                    2,
	"conch/backend/testrig/agentrig/agentservers":       3,
	"conch/backend/testrig/sshd/sshhost":                1,
	"conch/backend/testrig/seed":                        4,
	"conch/backend/devcmd/seedtasks":                    5,
	"conch/backend/devcmd/benchtable":                   0,
	"conch/backend/devcmd/load":                         0,
	"conch/backend/devcmd/macapp":                       0,
	"conch/backend/task":                                1,
	"conch/backend/autostart":                           1,
	"conch/backend/conversation":                        2,
	"conch/backend/event":                               3,
	"conch/backend/budget":                              1,
	"conch/backend/provider":                            2,
	"conch/backend/provider/internal/sse":               3,
	"conch/backend/provider/internal/wire":              4,
	"conch/backend/provider/internal/wiretest":          4,
	"conch/backend/store":                               3,
	"conch/backend/worktree":                            2,
	"conch/backend/doctor":                              2,
	"conch/backend/tool":                                3,
	"conch/backend/provider/openai":                     5,
	"conch/backend/provider/anthropic":                  5,
	"conch/backend/provider/agentcli":                   5,
	"conch/backend/provider/registry":                   6,
	"conch/backend/taskrun":                             4,
	"conch/backend/search":                              4,
	"conch/backend/activity":                            4,
	"conch/backend/push":                                4,
	"conch/backend/backup":                              5,
	"conch/backend/hostlink":                            5,
	"conch/backend/client":                              2,
	"conch/backend/cli":                                 6,
	"conch/backend/provider/shell":                      5,
	"conch/backend/chat":                                5,
	"conch/backend/engine":                              3,
	"conch/backend/chattask":                            6,
	"conch/backend/routine":                             6,
	"conch/backend/handoff":                             7,
	"conch/backend/notify":                              5,
	"conch/backend/tray":                                4,
	"conch/backend/desktop":                             9,
	"conch/backend/service":                             8,
	"conch/backend/gateway":                             9,
	"conch/backend/hostrunner":                          10,
	"conch":                                             11,
	"conch/backend/devcmd/contract":                     10,
	"conch/backend/devcmd/contract/gen":                 11,
}

// Where the test rigs and the developer commands live. Nothing a user runs
// imports them: a library or an engine may use a rig only from its tests,
// and a developer command is imported by no one outside its own folder.
const (
	rigs = "conch/backend/testrig/"
	cmds = "conch/backend/devcmd/"
)

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func TestNoPackageImportsOneAboveIt(t *testing.T) {
	pkgs := list(t)
	if len(pkgs) < len(floors)/2 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range check(pkgs, floors) {
		t.Error(p)
	}
	found := map[string]bool{}
	for _, p := range pkgs {
		found[p.ImportPath] = true
	}
	for path := range floors {
		if !found[path] {
			t.Errorf("floors names %s, which go list did not find: remove or rename it", path)
		}
	}
}

// TestTheCheckSeesAnUpwardImport keeps the check itself honest: each kind
// of wrong import below must be reported, so a change that quietly loosened
// check would fail here.
func TestTheCheckSeesAnUpwardImport(t *testing.T) {
	floors := map[string]int{
		"conch/backend/low":           0,
		"conch/backend/high":          1,
		"conch/backend/testrig/rig":   0,
		"conch/backend/devcmd/tool":   2,
		"conch/backend/devcmd/tool/x": 3,
	}
	cases := []struct {
		name string
		pkgs []pkg
		want string
	}{
		{"up", []pkg{{ImportPath: "conch/backend/low", Imports: []string{"conch/backend/high"}}}, "imports conch/backend/high (floor 1)"},
		{"same floor", []pkg{{ImportPath: "conch/backend/high", Imports: []string{"conch/backend/high"}}}, "imports conch/backend/high (floor 1)"},
		{"no floor", []pkg{{ImportPath: "conch/backend/new"}}, "conch/backend/new has no floor"},
		{"unknown import", []pkg{{ImportPath: "conch/backend/high", Imports: []string{"conch/backend/new"}}}, "imports conch/backend/new, which has no floor"},
		{"a library on a rig", []pkg{{ImportPath: "conch/backend/high", Imports: []string{rigs + "rig"}}}, "a test rig outside tests"},
		{"a test on a command", []pkg{{ImportPath: "conch/backend/high", XTestImports: []string{cmds + "tool"}}}, "a developer command"},
	}
	for _, c := range cases {
		got := strings.Join(check(c.pkgs, floors), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: check said %q, want it to say %q", c.name, got, c.want)
		}
	}
	fine := []pkg{
		{ImportPath: "conch/backend/high", Imports: []string{"conch/backend/low"}, TestImports: []string{rigs + "rig"}},
		{ImportPath: "conch/backend/devcmd/tool", Imports: []string{rigs + "rig", "conch/backend/high"}},
		{ImportPath: "conch/backend/devcmd/tool/x", Imports: []string{cmds + "tool"}},
	}
	if got := check(fine, floors); len(got) != 0 {
		t.Errorf("check refused imports that are allowed: %q", got)
	}
}

func list(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "-tags", "desktop", "conch/...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// check returns, sorted, every import among pkgs that breaks the floors:
// one of a package with no floor, one to the same floor or above, a rig
// imported by code that is not a test, a rig or a command, and a command
// imported from outside its own folder of commands.
func check(pkgs []pkg, floors map[string]int) []string {
	var problems []string
	for _, p := range pkgs {
		floor, ok := floors[p.ImportPath]
		if !ok {
			problems = append(problems, p.ImportPath+" has no floor: add it to floors")
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, "conch/") && imp != "conch" {
				continue
			}
			f, ok := floors[imp]
			switch {
			case !ok:
				problems = append(problems, p.ImportPath+" imports "+imp+", which has no floor")
			case f >= floor:
				problems = append(problems, p.ImportPath+" (floor "+itoa(floor)+") imports "+imp+" (floor "+itoa(f)+")")
			}
			if strings.HasPrefix(imp, rigs) && !strings.HasPrefix(p.ImportPath, rigs) && !strings.HasPrefix(p.ImportPath, cmds) {
				problems = append(problems, p.ImportPath+" imports "+imp+": a test rig outside tests")
			}
		}
		for _, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
			if strings.HasPrefix(imp, cmds) && !strings.HasPrefix(p.ImportPath, cmds) {
				problems = append(problems, p.ImportPath+" imports "+imp+": a developer command")
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func itoa(n int) string { return strconv.Itoa(n) }
