package chat

import (
	"conch/backend/conversation"
	"conch/backend/task"
	"conch/backend/tool"
	"fmt"
	"sort"
	"strings"
)

// agentPrompt is what a coding agent is told: where it works, its mode,
// and the Conch tools it has (by the names it sees them under, with its
// MCP prefix), never Conch's host tools.
func agentPrompt(c conversation.Conversation, offered tool.Set) string {
	var names []string
	for name := range offered {
		names = append(names, name)
	}
	sort.Strings(names)
	tools := ""
	if len(names) > 0 {
		tools = " Besides your own tools you have Conch's, from its MCP server \"conch\": " + strings.Join(names, ", ") + "."
	}
	return fmt.Sprintf("You are working for Conch, an assistant on the person's computer, in the folder %s. "+
		"Permission mode: %s; Conch asks the person before you act when the mode says so. "+
		"When an action is refused or declined, do not try to get around it: say what you would have done.%s "+
		"Keep replies short.", c.Cwd, modeWords[c.Mode], tools)
}

// modeWords say what each mode allows, for a prompt.
var modeWords = map[task.Mode]string{
	task.Plan:  "plan: you may only read; side effects are refused",
	task.Ask:   "ask: the person is asked before every side effect",
	task.Edits: "edits: file edits run, commands and network access ask first",
	task.Auto:  "auto: nothing asks",
}

func systemPrompt(c conversation.Conversation) string {
	return fmt.Sprintf("You are Conch, an assistant on the person's computer. You work in the folder %s; "+
		"tool paths are relative to it and cannot leave it. Permission mode: %s. "+
		"When a tool call is refused or declined, do not try to get around it: say what you would have done. "+
		"Keep replies short.", c.Cwd, modeWords[c.Mode])
}
