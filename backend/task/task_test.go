package task

import (
	"conch/backend/ask"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestTransitionTableEveryPair(t *testing.T) {
	allowed := map[[2]Status]bool{
		{Queued, Running}: true, {Queued, Stopped}: true, {Queued, Failed}: true,
		{Running, NeedsYou}: true, {Running, Done}: true, {Running, Failed}: true,
		{Running, Stopped}: true, {Running, Interrupted}: true,
		{NeedsYou, Running}: true, {NeedsYou, Failed}: true, {NeedsYou, Stopped}: true,
		{NeedsYou, Interrupted}: true,
		{Done, Queued}:          true, {Failed, Queued}: true, {Stopped, Queued}: true, {Interrupted, Queued}: true,
	}
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, from := range Statuses {
		for _, to := range Statuses {
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				tk := Task{ID: "x", Status: from}
				err := tk.SetStatus(to, now)
				if allowed[[2]Status{from, to}] {
					if err != nil {
						t.Fatalf("want allowed, got %v", err)
					}
					if tk.Status != to {
						t.Fatalf("status %s, want %s", tk.Status, to)
					}
					return
				}
				if !errors.Is(err, ErrInvalidTransition) {
					t.Fatalf("want ErrInvalidTransition, got %v", err)
				}
				if tk.Status != from {
					t.Fatalf("refused change still moved status to %s", tk.Status)
				}
			})
		}
	}
}

func TestSetStatusStampsTimes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := Task{ID: "x", Status: Queued, Ask: &ask.Question{ID: "q"}, Current: "Running x", Pid: 42}
	if err := tk.SetStatus(Running, t0); err != nil {
		t.Fatal(err)
	}
	if tk.StartedAt == nil || !tk.StartedAt.Equal(t0) {
		t.Fatalf("startedAt %v", tk.StartedAt)
	}
	t1 := t0.Add(time.Minute)
	if err := tk.SetStatus(Done, t1); err != nil {
		t.Fatal(err)
	}
	if tk.EndedAt == nil || !tk.EndedAt.Equal(t1) || tk.Ask != nil || tk.Current != "" || tk.Pid != 0 {
		t.Fatalf("finish did not clear live fields: %+v", tk)
	}
	if err := tk.SetStatus(Queued, t1); err != nil {
		t.Fatal(err)
	}
	if tk.StartedAt != nil || tk.EndedAt != nil {
		t.Fatalf("retry kept times: %+v", tk)
	}
}

func TestStepsKeepLastTwelve(t *testing.T) {
	var tk Task
	for i := 0; i < 20; i++ {
		tk.AddStep(string(rune('a' + i)))
	}
	if len(tk.Steps) != MaxSteps {
		t.Fatalf("len %d", len(tk.Steps))
	}
	if tk.Steps[0] != "i" || tk.Steps[11] != "t" {
		t.Fatalf("steps %v", tk.Steps)
	}
}

func TestJSONIsCamelCaseAndRoundTrips(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	code := 2
	in := Task{
		ID: "id", Kind: Helper, Status: NeedsYou, Title: "t", Text: "x", ConversationID: "c",
		ParentConversationID: "p", GroupID: "g", Provider: "shell", Model: "m", By: "by",
		Mode: Ask, Cwd: "/tmp", Current: "Running x", Steps: []string{"Started x"},
		Summary: "s", Error: "e", Note: "n", Result: &Result{Text: "r", Source: SourceExit, At: now},
		Ask:      &ask.Question{ID: "q", Tool: "run_command", Detail: "d", AskedAt: now, ExpiresAt: now.Add(time.Hour)},
		Worktree: &Worktree{Path: "/w", Branch: "conch/id", Base: "abc", Kept: true, Work: WorktreeWork{Changed: 1}, Overlap: []Overlap{{File: "src/app.ts", With: []string{"id2"}}}},
		Wake:     WakePending, Notified: true, Paused: &Paused{Kind: "usage", Until: now},
		OutputBytes: 9, ExitCode: &code, CreatedAt: now, StartedAt: &now, EndedAt: &now, Rev: 3,
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "kind", "status", "title", "text", "conversationId",
		"parentConversationId", "groupId", "provider", "model", "by", "mode", "cwd", "current",
		"steps", "summary", "error", "note", "result", "ask", "worktree", "wake", "notified",
		"paused", "outputBytes", "createdAt", "startedAt", "endedAt", "rev"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	for k := range keys {
		if strings.ContainsAny(k, "_-") || strings.ToLower(k[:1]) != k[:1] {
			t.Errorf("key %q is not camelCase", k)
		}
	}
	var out Task
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip differs:\n in %+v\nout %+v", in, out)
	}
}

func TestCloneIsDeep(t *testing.T) {
	tk := Task{Steps: []string{"a"}, Ask: &ask.Question{ID: "q"},
		Worktree: &Worktree{Overlap: []Overlap{{File: "f", With: []string{"x"}}}}}
	c := tk.Clone()
	c.Steps[0] = "b"
	c.Ask.ID = "z"
	c.Worktree.Overlap[0].File = "g"
	c.Worktree.Overlap[0].With[0] = "y"
	if tk.Steps[0] != "a" || tk.Ask.ID != "q" || tk.Worktree.Overlap[0].File != "f" || tk.Worktree.Overlap[0].With[0] != "x" {
		t.Fatal("clone shares memory")
	}
}

func TestTitleFrom(t *testing.T) {
	cases := map[string]string{
		"  ls -la \nmore":           "ls -la",
		"short":                     "short",
		strings.Repeat("word ", 30): strings.Repeat("word ", 11) + "word…",
	}
	for in, want := range cases {
		if got := TitleFrom(in); got != want {
			t.Errorf("TitleFrom(%q) = %q, want %q", in, got, want)
		}
	}
}

// docs/state-machine.md draws exactly the transition table: every edge it
// draws is allowed, and every allowed change is drawn.
func TestTheStateMachineDocMatchesTheTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "state-machine.md"))
	if err != nil {
		t.Fatal(err)
	}
	edge := regexp.MustCompile(`^\s+([a-z_]+) --> ([a-z_]+):`)
	drawn := map[[2]Status]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		m := edge.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		from, to := Status(strings.ReplaceAll(m[1], "_", "-")), Status(strings.ReplaceAll(m[2], "_", "-"))
		if !CanTransition(from, to) {
			t.Errorf("the doc draws %s → %s, which the table refuses", from, to)
		}
		drawn[[2]Status{from, to}] = true
	}
	for from, tos := range transitions {
		for _, to := range tos {
			if !drawn[[2]Status{from, to}] {
				t.Errorf("the table allows %s → %s, which the doc does not draw", from, to)
			}
		}
	}
}

func TestAChatTaskOnTheShellDoesNotResume(t *testing.T) {
	chatTask := Task{ConversationID: "c1", Status: Interrupted, Provider: "claude-code"}
	if why := chatTask.Resumable(); why != "" {
		t.Fatalf("a chat task on a model: %q", why)
	}
	chatTask.Provider = ShellProvider
	if why := chatTask.Resumable(); !strings.Contains(why, "Try again") {
		t.Fatalf("a chat task on the shell: %q, want it refused with what to do", why)
	}
}
