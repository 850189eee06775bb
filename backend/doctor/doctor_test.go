package doctor

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"conch/backend/pref"
	"conch/backend/task"
)

func healthy() Input {
	return Input{
		Tasks:         []task.Task{{Status: task.Done, Title: "a"}},
		Providers:     []Provider{{ID: "shell", Name: "Shell", Ready: true}, {ID: "ollama", Name: "Ollama", Ready: true}},
		Store:         Store{Path: "/h/conch.db", Schema: 1, Size: 32 << 10},
		Notifications: Notifications{Service: "dunst 1.9 over D-Bus", Actions: true, Topics: pref.Topics{Tasks: true, Approvals: true}},
		Tray:          Feature{Running: true, OK: true},
		Shortcut:      Feature{Running: true, OK: true},
	}
}

func find(t *testing.T, r Report, id string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %q", id)
	return Check{}
}

func TestHealthyReport(t *testing.T) {
	r := Run(healthy())
	if !r.OK {
		t.Fatal("healthy input is not OK")
	}
	for _, c := range r.Checks {
		if c.Level != OK {
			t.Errorf("%s: %s %q", c.ID, c.Level, c.Summary)
		}
	}
	if got := find(t, r, "store").Summary; got != "Opens fine: schema version 1, 32 KiB." {
		t.Fatalf("store summary %q", got)
	}
	if ids := len(r.Checks); ids != 6 {
		t.Fatalf("%d checks", ids)
	}
}

func TestTasksWarnAboutInterruptedAndReportNeedsYou(t *testing.T) {
	in := healthy()
	in.Tasks = []task.Task{
		{Status: task.Interrupted, Title: "Build"},
		{Status: task.Interrupted, Title: "Test"},
		{Status: task.NeedsYou, Title: "Clean"},
		{Status: task.Running, Title: "Lint"},
	}
	r := Run(in)
	c := find(t, r, "tasks")
	if c.Level != Warn || c.Link != "/tasks" || c.Fix == "" {
		t.Fatalf("tasks check %+v", c)
	}
	want := "1 task is working; 1 task needs your OK; 2 tasks were interrupted when Conch stopped."
	if c.Summary != want {
		t.Fatalf("summary %q, want %q", c.Summary, want)
	}
	if strings.Join(c.Details, "|") != "Interrupted: Build|Interrupted: Test|Needs your OK: Clean" {
		t.Fatalf("details %v", c.Details)
	}
	if !r.OK {
		t.Fatal("a warning made the report fail")
	}
	in.Tasks = in.Tasks[2:3]
	if c := find(t, Run(in), "tasks"); c.Level != Info {
		t.Fatalf("needs-you only: %s", c.Level)
	}
}

// Normal work is not a problem: tasks working, waiting in line or waiting
// for an OK never make the check warn.
func TestNormalWorkNeedsNoLook(t *testing.T) {
	in := healthy()
	in.Tasks = []task.Task{{Status: task.Running, Title: "a"}, {Status: task.Queued, Title: "b"}, {Status: task.NeedsYou, Title: "c"}, {Status: task.Done, Title: "d"}}
	c := find(t, Run(in), "tasks")
	if c.Level == Warn || c.Level == Fail || c.Fix != "" {
		t.Fatalf("normal work: %+v", c)
	}
	in.Tasks = in.Tasks[:2]
	if c := find(t, Run(in), "tasks"); c.Level != OK {
		t.Fatalf("working and waiting: %+v", c)
	}
}

// With only the shell ready (the first run) the check says a chat cannot
// answer in words and where to connect a model; it is not OK.
func TestOnlyTheShellIsNotProvidersOK(t *testing.T) {
	in := healthy()
	in.Providers = []Provider{{ID: "shell", Name: "Shell", Ready: true}, {ID: "claude-code", Name: "Claude Code", Reason: "Not logged in"}}
	c := find(t, Run(in), "providers")
	if c.Level != Warn || !strings.Contains(c.Summary, "Only the shell is ready") || c.Link != "/providers" || c.Fix == "" {
		t.Fatalf("only the shell: %+v", c)
	}
	in.Providers = in.Providers[:1]
	if c := find(t, Run(in), "providers"); c.Level != Warn {
		t.Fatalf("the shell alone: %+v", c)
	}
}

// Each coding-agent CLI's line names its version, so a person can see
// which one they run, ready or too old.
func TestProvidersShowTheCLIsVersions(t *testing.T) {
	in := healthy()
	in.Providers = []Provider{{ID: "shell", Name: "Shell", Ready: true},
		{ID: "claude-code", Name: "Claude Code", Ready: true, Version: "2.1.332"},
		{ID: "codex", Name: "Codex", Version: "0.99.0", Reason: "Codex 0.99.0 is older than 0.142.5, the oldest Conch works with; update it: npm install -g @openai/codex"}}
	c := find(t, Run(in), "providers")
	want := []string{"Shell: ready", "Claude Code 2.1.332: ready",
		"Codex 0.99.0: not ready — Codex 0.99.0 is older than 0.142.5, the oldest Conch works with; update it: npm install -g @openai/codex"}
	if !slices.Equal(c.Details, want) {
		t.Fatalf("details %q", c.Details)
	}
}

// An interrupted chat task is offered Resume; a command only Try again.
func TestInterruptedChatTasksAreOfferedResume(t *testing.T) {
	in := healthy()
	in.Tasks = []task.Task{{Status: task.Interrupted, Title: "Write docs", ConversationID: "c1"}}
	c := find(t, Run(in), "tasks")
	if !strings.Contains(c.Fix, "press Resume") || strings.Contains(c.Fix, "Try again") || c.Details[0] != "Interrupted (can resume): Write docs" {
		t.Fatalf("chat task only: %+v", c)
	}
	in.Tasks = append(in.Tasks, task.Task{Status: task.Interrupted, Title: "make"})
	if c := find(t, Run(in), "tasks"); !strings.Contains(c.Fix, "Resume on the chat tasks") || !strings.Contains(c.Fix, "Try again on the commands") {
		t.Fatalf("both: %q", c.Fix)
	}
}

func TestProvidersAndStoreFailures(t *testing.T) {
	in := healthy()
	in.Providers = []Provider{{Name: "Shell", Ready: false, Reason: "bash was not found on PATH"}}
	in.Store = Store{Path: "/h/conch.db", Err: errors.New("permission denied")}
	r := Run(in)
	if r.OK {
		t.Fatal("failures reported OK")
	}
	p := find(t, r, "providers")
	if p.Level != Fail || p.Details[0] != "Shell: not ready — bash was not found on PATH" {
		t.Fatalf("providers %+v", p)
	}
	if s := find(t, r, "store"); s.Level != Fail || !strings.Contains(s.Summary, "permission denied") {
		t.Fatalf("store %+v", s)
	}
}

func TestNotificationsAndDesktopParts(t *testing.T) {
	in := healthy()
	in.Notifications = Notifications{Service: "plain notifications (linux), without buttons", Problem: "no notification server answers on D-Bus", Topics: pref.Topics{Tasks: true}}
	in.Tray = Feature{Running: false, Detail: "conch serve has no tray"}
	in.Shortcut = Feature{Running: true, OK: false, Detail: "X11: the combination is taken"}
	r := Run(in)
	n := find(t, r, "notifications")
	if n.Level != Warn || strings.Join(n.Details, "|") != "When a background task finishes: on|When a task needs your OK: off" {
		t.Fatalf("notifications %+v", n)
	}
	if tr := find(t, r, "tray"); tr.Level != Info || tr.Summary != "Not used here: conch serve has no tray." {
		t.Fatalf("tray %+v", tr)
	}
	if s := find(t, r, "shortcut"); s.Level != Warn || s.Details[0] != "X11: the combination is taken" {
		t.Fatalf("shortcut %+v", s)
	}
	text := r.Text()
	if !strings.Contains(text, "warn  Notifications") || !strings.Contains(text, "→ Start a notification server") {
		t.Fatalf("text:\n%s", text)
	}
	// The fix names what the system has: no dunst on Windows or macOS.
	for goos, want := range map[string]string{"linux": "dunst", "windows": "Settings → System → Notifications", "darwin": "System Settings → Notifications"} {
		in.Notifications.OS = goos
		if fix := find(t, Run(in), "notifications").Fix; !strings.Contains(fix, want) || (goos != "linux" && strings.Contains(fix, "dunst")) {
			t.Errorf("%s: fix %q", goos, fix)
		}
	}
}
