package handoff_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"conch/backend/chattask"
	"conch/backend/handoff"
	"conch/backend/task"
)

// Helpers side by side each get a range of ports of their own: CONCH_PORT
// in their commands' environment, and in their prompt.
func TestHelpersGetPortsOfTheirOwn(t *testing.T) {
	srv := startModel(t, []string{"big-model"}, func(_ context.Context, a asked) answer {
		if !a.Task() {
			return handsOff(handoff.DelegateTool, map[string]any{"parts": []map[string]any{
				{"title": "One", "instructions": "PART one"}, {"title": "Two", "instructions": "PART two"}, {"title": "Three", "instructions": "PART three"},
			}})(context.Background(), a)
		}
		name := strings.Fields(strings.SplitN(a.First(), "PART ", 2)[1])[0]
		if len(a.Results()) == 0 {
			// Each waits a little, so they run side by side.
			return callTool("run_command", map[string]string{"command": "sleep 1; echo $CONCH_PORT > port-" + name + ".txt"})
		}
		return callTool("report_result", map[string]string{"summary": "noted"})
	})
	e := setup(t, []engineOpt{{id: "main", name: "Main", srv: srv}})
	ch := e.chat(t, "main", task.Auto, e.dir)
	if _, err := e.chats.Send(ch.ID, "split it"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, ch.ID)
	seen := map[int]string{}
	for _, name := range []string{"one", "two", "three"} {
		b, err := os.ReadFile(filepath.Join(e.dir, "port-"+name+".txt"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		port, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || port < chattask.PortBase || (port-chattask.PortBase)%chattask.PortSpan != 0 {
			t.Fatalf("%s got CONCH_PORT %q", name, b)
		}
		if other, ok := seen[port]; ok {
			t.Fatalf("%s and %s both got port %d", name, other, port)
		}
		seen[port] = name
	}
	prompted := 0
	for _, a := range srv.requests() {
		if a.Task() && strings.Contains(a.System, "are yours alone ($CONCH_PORT=") {
			prompted++
		}
	}
	if prompted < 3 {
		t.Errorf("%d helper requests told of their ports, want every one", prompted)
	}
}
