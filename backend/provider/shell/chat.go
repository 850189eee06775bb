package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"conch/backend/provider"
)

// ChatID is the shell's provider id, in chats as in tasks.
const ChatID = "shell"

// replyLines bounds how much of a command's output the reply repeats; the
// step keeps all of it.
const replyLines = 60

// Chat is the shell as a chat's provider (SPEC §1: the model is the shell).
// Each message the person sends becomes one call of the chat's own
// run_command tool with the message as the command, so it goes through the
// chat's gate: it asks, runs or is refused as the chat's mode and taint
// say, and a stop ends it like any command. Once the command is over, the
// reply is what it printed and how it ended. It costs nothing.
type Chat struct {
	// LookPath finds bash; nil is exec.LookPath.
	LookPath func(string) (string, error)
}

var _ provider.Provider = (*Chat)(nil)

// Info says the shell is ready where bash is on PATH. It can ask: its one
// step goes through Conch's gate.
func (c *Chat) Info(context.Context) provider.Info {
	look := c.LookPath
	if look == nil {
		look = exec.LookPath
	}
	info := provider.Info{
		ID: ChatID, Name: "Shell", Kind: ChatID, Category: provider.BuiltInShell,
		Ready: true, Models: provider.Models{List: []string{}}, CanAsk: true,
	}
	if _, err := look("bash"); err != nil {
		info.Ready, info.Reason = false, "bash was not found on PATH"
	}
	return info
}

// Stream answers the newest message: a person's message becomes a
// run_command call; the call's result becomes the reply.
func (c *Chat) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	if info := c.Info(ctx); !info.Ready {
		return nil, fmt.Errorf("%s: %w", info.Reason, provider.ErrNotReady)
	}
	ch := make(chan provider.Event, 3)
	defer close(ch)
	if len(req.Messages) == 0 {
		ch <- provider.Event{Kind: provider.DoneEvent, StopReason: "end_turn"}
		return ch, nil
	}
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == provider.ToolRole:
		ch <- provider.Event{Kind: provider.TextDelta, Text: Reply(last.Text, last.IsError)}
	case last.Role == provider.User && strings.TrimSpace(last.Text) != "":
		if !offers(req.Tools, "run_command") {
			ch <- provider.Event{Kind: provider.TextDelta, Text: "This chat cannot run commands here, so nothing ran."}
			break
		}
		args, _ := json.Marshal(map[string]string{"command": last.Text})
		ch <- provider.Event{Kind: provider.ToolCallEvent, Call: &provider.ToolCall{ID: fmt.Sprintf("sh-%d", len(req.Messages)), Name: "run_command", Arguments: args}}
	}
	ch <- provider.Event{Kind: provider.DoneEvent, StopReason: "end_turn"}
	return ch, nil
}

func offers(tools []provider.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ending is the bracketed line run_command ends its output with.
var ending = regexp.MustCompile(`\n?\[(exit code (\d+)(, no output)?|killed by signal (\d+)|stopped|timed out after [^\]]+)\](: .*)?\s*$`)

// Reply is the shell's reply to a run_command result: the end of the
// output in a code block, then how the command ended in words.
func Reply(output string, failed bool) string {
	how := ""
	if m := ending.FindStringSubmatchIndex(output); m != nil {
		word := output[m[2]:m[3]]
		output = output[:m[0]]
		switch {
		case strings.HasPrefix(word, "exit code 0"):
		case strings.HasPrefix(word, "exit code "):
			how = "Exited with code " + word[len("exit code "):] + "."
		case strings.HasPrefix(word, "killed by signal "):
			how = "Killed by signal " + word[len("killed by signal "):] + "."
		case word == "stopped":
			how = "Stopped."
		default:
			how = capital(word) + "."
		}
	} else if failed {
		// Refused by the gate, declined, or an error before it ran: the
		// result says why in words already.
		return strings.TrimSpace(output)
	}
	output = strings.TrimRight(output, "\n\r\t ")
	if output == "" {
		if how == "" {
			return "Done, with no output."
		}
		return how
	}
	lines := strings.Split(output, "\n")
	if len(lines) > replyLines {
		lines = append([]string{fmt.Sprintf("… %d earlier lines are in the step above", len(lines)-replyLines)}, lines[len(lines)-replyLines:]...)
	}
	body := strings.Join(lines, "\n")
	fence := "```"
	for strings.Contains(body, fence) {
		fence += "`"
	}
	reply := fence + "text\n" + body + "\n" + fence
	if how != "" {
		reply += "\n\n" + how
	}
	return reply
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
