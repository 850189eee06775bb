package agentcli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"conch/backend/provider"
)

func TestACodexPatchReadsAsWhatItTakesOutAndPutsIn(t *testing.T) {
	diff := "--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,3 @@\n # Notes\n--- a rule\n+=== a rule\n keep\n@@ -9,2 +9,2 @@\n-old end\n+new end\n\\ No newline at end of file\n"
	w := codexWrite("notes.md", "update", diff)
	if w == nil || w.Whole || w.Old != "# Notes\n-- a rule\nkeep\n…\nold end\n" || w.New != "# Notes\n=== a rule\nkeep\n…\nnew end\n" {
		t.Fatalf("update: %+v", w)
	}
	if w := codexWrite("n.md", "add", "hello\n"); w == nil || !w.Whole || w.New != "hello\n" {
		t.Fatalf("add: %+v", w)
	}
	if w := codexWrite("n.md", "delete", "bye\n"); w == nil || w.Old != "bye\n" || w.New != "" || w.Whole {
		t.Fatalf("delete: %+v", w)
	}
	if w := codexWrite("n.md", "rename", ""); w != nil {
		t.Fatalf("an unknown kind: %+v", w)
	}
}

// Codex 0.142 now and then says a turn completed before it says a command
// it was allowed to run did (seen under load with the real CLI), and the
// turn's end used to stop listening there. The turn's end waits a moment
// for the allowed commands; one that never completes still shows as run,
// one completed late shows once, and one the gate refused shows nothing.
func TestACommandCodexCompletesLateStillShowsAsRunOnce(t *testing.T) {
	out := make(chan provider.Event, 16)
	allow := map[string]bool{"echo hi > made.txt": true, "echo late": true}
	s := newCodexSession(provider.Request{Ask: func(_ context.Context, a provider.Action) (bool, error) { return allow[a.Command], nil }})
	s.e = emitter{ctx: context.Background(), out: out}
	notify := func(method, params string) {
		t.Helper()
		if err := s.notify(method, json.RawMessage(params)); err != nil {
			t.Fatal(err)
		}
	}
	item := func(id, cmd, status string) string {
		return `{"item":{"id":"` + id + `","type":"commandExecution","command":"` + cmd + `","status":"` + status + `"}}`
	}
	started := func(id, cmd string) {
		t.Helper()
		notify("item/started", item(id, cmd, "inProgress"))
		if _, rerr := s.request(context.Background(), "item/commandExecution/requestApproval", json.RawMessage(`{"itemId":"`+id+`","command":"`+cmd+`"}`)); rerr != nil {
			t.Fatal(rerr)
		}
	}
	started("c1", "echo hi > made.txt")
	started("c2", "rm -r build")
	started("c3", "echo late")
	notify("turn/completed", `{"turn":{"status":"completed","items":[]}}`)
	ctx, giveUp := context.WithCancel(context.Background())
	settled := make(chan struct{})
	go func() { defer close(settled); s.settle(ctx, time.Minute) }()
	notify("item/completed", item("c3", "echo late", "completed")) // while settle waits
	notify("item/completed", item("c2", "rm -r build", "declined"))
	select {
	case <-settled:
		t.Fatal("settle ended with c1 still open")
	case <-time.After(50 * time.Millisecond):
	}
	giveUp() // as its wait running out does: c1 never completed
	<-settled
	notify("item/completed", item("c1", "echo hi > made.txt", "completed")) // after it was shown
	close(out)
	var steps []string
	for ev := range out {
		if ev.Kind == provider.StepEvent {
			steps = append(steps, ev.Text)
		}
	}
	want := []string{"Ran echo late", "Declined: Run `rm -r build` in ~?", "Ran echo hi > made.txt"}
	if len(steps) != 3 || steps[0] != want[0] || steps[2] != want[2] || !strings.HasPrefix(steps[1], "Declined") {
		t.Fatalf("steps %q, want %q", steps, want)
	}
}
