package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"conch/backend/conversation"
	"conch/backend/provider"
)

// cutOffText is the result of a call that was running when Conch stopped
// (SPEC §3 Resume): it is never run again on its own, so a command that
// is not safe to repeat (git push, a migration) runs twice only when the
// model, in the chat's mode, decides so.
const cutOffText = "Conch stopped while this ran; it may have partly run. Its output so far:"

// maxCutOffOutput bounds what of a cut-off command's output its result
// carries: the end, where it stopped.
const maxCutOffOutput = 8 << 10

// cutOff is the result of call, which was running when Conch stopped;
// left is the end of the task's log as that run left it.
func cutOff(call provider.ToolCall, left string) conversation.ToolResult {
	out := cutOffText + " nothing was captured."
	if printed, found := printedBy(call, left); found && printed != "" {
		out = cutOffText + "\n" + printed
	} else if !found && strings.TrimSpace(left) != "" {
		// A command whose start is not in what was read of the log printed
		// more than that (or never began): say whose words these are.
		out = cutOffText + " (the end of the task's log; where it began is further back)\n" + lastOf(strings.TrimRight(left, "\n"))
	}
	return conversation.ToolResult{CallID: call.ID, Name: call.Name, Output: out, IsError: true}
}

// printedBy is what the command call had printed into the task's log
// left when Conch stopped: everything after its "$ command" line (written
// by run_command as it starts), its last maxCutOffOutput bytes. found is
// false when the line is not in left; a call that is no command printed
// nothing (found, "").
func printedBy(call provider.ToolCall, left string) (string, bool) {
	if call.Name != "run_command" {
		return "", true
	}
	var a struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(call.Arguments, &a) != nil || a.Command == "" {
		return "", true
	}
	head := "\n$ " + a.Command + "\n"
	i := strings.LastIndex(left, head)
	if i < 0 {
		return "", false
	}
	return lastOf(strings.TrimRight(left[i+len(head):], "\n")), true
}

// lastOf is the end of s, at most maxCutOffOutput bytes from a line's
// start, saying how much came before it.
func lastOf(s string) string {
	if len(s) <= maxCutOffOutput {
		return s
	}
	tail := s[len(s)-maxCutOffOutput:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	tail = strings.ToValidUTF8(tail, "")
	return fmt.Sprintf("… (%d bytes before this)\n", len(s)-len(tail)) + tail
}
