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
	"conch/backend/ask":                                  0,
	"conch/backend/errcode":                              0,
	"conch/backend/pref":                                 0,
	"conch/backend/procmark":                             0,
	"conch/backend/output":                               0,
	"conch/backend/internal/procgroup":                   0,
	"conch/backend/internal/brief":                       0,
	"conch/backend/internal/proctree":                    1,
	"conch/backend/internal/sessionbus":                  0,
	"conch/backend/internal/dbustest":                    0,
	"conch/backend/internal/secrettest":                  1,
	"conch/backend/internal/xvfbtest":                    0,
	"conch/backend/internal/layers":                      0,
	"conch/backend/shortcut":                             0,
	"conch/backend/integration":                          0,
	"conch/backend/internal/agentbin":                    0,
	"conch/backend/internal/modelserver":                 0,
	"conch/backend/internal/modelserver/anthropic":       1,
	"conch/backend/internal/modelserver/responses":       1,
	"conch/backend/internal/modelserver/gemini":          1,
	"conch/backend/internal/modelserver/chatcompletions": 1,
	"conch/backend/internal/lru":                         0,
	"conch/backend/internal/agentrig":                    2,
	"conch/backend/internal/agentrig/agentservers":       3,
	"conch/backend/internal/seed":                        4,
	"conch/backend/internal/seedtasks":                   5,
	"conch/backend/internal/benchtable":                  0,
	"conch/backend/internal/load":                        0,
	"conch/backend/task":                                 1,
	"conch/backend/conversation":                         2,
	"conch/backend/event":                                3,
	"conch/backend/budget":                               1,
	"conch/backend/provider":                             2,
	"conch/backend/provider/internal/sse":                3,
	"conch/backend/provider/internal/wire":               4,
	"conch/backend/provider/internal/wiretest":           4,
	"conch/backend/store":                                3,
	"conch/backend/worktree":                             2,
	"conch/backend/doctor":                               2,
	"conch/backend/tool":                                 3,
	"conch/backend/provider/openai":                      5,
	"conch/backend/provider/anthropic":                   5,
	"conch/backend/provider/agentcli":                    5,
	"conch/backend/provider/registry":                    6,
	"conch/backend/taskrun":                              4,
	"conch/backend/backup":                               5,
	"conch/backend/provider/shell":                       5,
	"conch/backend/chat":                                 5,
	"conch/backend/engine":                               3,
	"conch/backend/follow":                               6,
	"conch/backend/chattask":                             6,
	"conch/backend/handoff":                              7,
	"conch/backend/notify":                               5,
	"conch/backend/tray":                                 4,
	"conch/backend/desktop":                              9,
	"conch/backend/service":                              8,
	"conch/backend/gateway":                              9,
	"conch":                                              10,
	"conch/backend/internal/contract":                    10,
	"conch/backend/internal/contract/gen":                11,
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestNoPackageImportsOneAboveIt(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "-tags", "desktop", "conch/...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var problems []string
	seen := 0
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		floor, ok := floors[p.ImportPath]
		if !ok {
			problems = append(problems, p.ImportPath+" has no floor: add it to floors")
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, "conch/") && imp != "conch" {
				continue
			}
			if f, ok := floors[imp]; ok && f >= floor {
				problems = append(problems, p.ImportPath+" (floor "+itoa(floor)+") imports "+imp+" (floor "+itoa(f)+")")
			}
		}
	}
	if seen < len(floors)/2 {
		t.Fatalf("go list found only %d packages", seen)
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
