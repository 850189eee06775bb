package chat_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/provider"
	"conch/backend/provider/shell"
	"conch/backend/task"
)

// withShell adds the built-in shell as the chat provider "shell".
func withShell() opts {
	return opts{func(c *chat.Config) {
		c.Providers = provider.Fixed{"fake": c.Providers.(provider.Fixed)["fake"], shell.ChatID: &shell.Chat{}}
	}}
}

func (e *env) shellChat(t *testing.T, mode task.Mode) conversation.Conversation {
	t.Helper()
	c, err := e.m.Create(chat.CreateRequest{Provider: shell.ChatID, Mode: string(mode), Cwd: e.dir})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func lastReply(ms []conversation.Message) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Kind == conversation.Assistant {
			return ms[i].Text
		}
	}
	return ""
}

// TestShellChatRunsEachMessageAsACommand: in auto mode the message runs
// in the chat's folder at once, as one run_command step, and the reply is
// what it printed.
func TestShellChatRunsEachMessageAsACommand(t *testing.T) {
	e := setup(t, newScripted(), withShell())
	c := e.shellChat(t, task.Auto)
	if _, err := e.m.Send(c.ID, "echo hi-from-the-shell; pwd; touch made.txt"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	ms := e.messages(t, c.ID)
	var calls int
	for _, m := range ms {
		if m.ToolCall != nil {
			calls++
			if m.ToolCall.Name != "run_command" || !strings.Contains(string(m.ToolCall.Arguments), "echo hi-from-the-shell") {
				t.Errorf("step %+v", m.ToolCall)
			}
		}
	}
	reply := lastReply(ms)
	if calls != 1 || !strings.Contains(reply, "hi-from-the-shell\n"+e.dir) || strings.Contains(reply, "exit code") {
		t.Fatalf("%d steps, reply %q\n%s", calls, reply, e.transcript(t, c.ID))
	}
	if _, err := os.Stat(filepath.Join(e.dir, "made.txt")); err != nil {
		t.Errorf("the command did not run in the chat's folder: %v", err)
	}

	if _, err := e.m.Send(c.ID, "echo oops >&2; exit 3"); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, c.ID, "the second reply", func(conversation.Conversation) bool {
		return strings.Contains(lastReply(e.messages(t, c.ID)), "Exited with code 3.")
	})
	if r := lastReply(e.messages(t, c.ID)); !strings.Contains(r, "oops") {
		t.Errorf("reply %q", r)
	}
}

// TestShellChatAsksAsTheModeSays: in ask mode nothing runs until the
// person allows it; a denied command never runs; plan mode refuses.
func TestShellChatAsksAsTheModeSays(t *testing.T) {
	e := setup(t, newScripted(), withShell())
	c := e.shellChat(t, task.Ask)
	if _, err := e.m.Send(c.ID, "touch asked.txt"); err != nil {
		t.Fatal(err)
	}
	c = e.asking(t, c.ID)
	if !strings.Contains(c.Ask.Detail, "touch asked.txt") {
		t.Errorf("asks %q", c.Ask.Detail)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "asked.txt")); err == nil {
		t.Fatal("it ran before the person said so")
	}
	if _, err := e.m.Answer(c.ID, c.Ask.ID, true); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	if _, err := os.Stat(filepath.Join(e.dir, "asked.txt")); err != nil {
		t.Fatalf("allowed, but it did not run: %v", err)
	}

	if _, err := e.m.Send(c.ID, "touch denied.txt"); err != nil {
		t.Fatal(err)
	}
	c = e.asking(t, c.ID)
	if _, err := e.m.Answer(c.ID, c.Ask.ID, false); err != nil {
		t.Fatal(err)
	}
	e.idle(t, c.ID)
	if _, err := os.Stat(filepath.Join(e.dir, "denied.txt")); err == nil {
		t.Fatal("a denied command ran")
	}

	p := e.shellChat(t, task.Plan)
	if _, err := e.m.Send(p.ID, "touch planned.txt"); err != nil {
		t.Fatal(err)
	}
	e.idle(t, p.ID)
	if _, err := os.Stat(filepath.Join(e.dir, "planned.txt")); err == nil {
		t.Fatal("plan mode ran a command")
	}
	if r := lastReply(e.messages(t, c.ID)); !strings.Contains(r, "declined") {
		t.Errorf("the reply to a denied command is %q", r)
	}
	if r := lastReply(e.messages(t, p.ID)); !strings.Contains(r, "plan mode") {
		t.Errorf("the reply in plan mode is %q:\n%s", r, e.transcript(t, p.ID))
	}
}
