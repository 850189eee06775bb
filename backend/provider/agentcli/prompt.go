package agentcli

import (
	"fmt"
	"strings"

	"conch/backend/provider"
)

// prompt turns the conversation into the one text the CLI is given: the
// system prompt, the earlier turns labelled by speaker, then the last user
// message. A single user message with no system prompt is sent as is.
func prompt(req provider.Request) string {
	msgs := req.Messages
	last := ""
	if n := len(msgs); n > 0 && msgs[n-1].Role == provider.User {
		last = msgs[n-1].Text
		msgs = msgs[:n-1]
	}
	if len(msgs) == 0 && req.System == "" {
		return last
	}
	var b strings.Builder
	if req.System != "" {
		b.WriteString(strings.TrimSpace(req.System))
		b.WriteString("\n\n")
	}
	if len(msgs) > 0 {
		b.WriteString("Earlier in this conversation:\n\n")
		for _, m := range msgs {
			switch m.Role {
			case provider.User:
				b.WriteString("User: " + m.Text + "\n\n")
			case provider.Assistant:
				if m.Text != "" {
					b.WriteString("Assistant: " + m.Text + "\n\n")
				}
				for _, c := range m.ToolCalls {
					fmt.Fprintf(&b, "Assistant used %s: %s\n\n", c.Name, c.Arguments)
				}
			case provider.ToolRole:
				label := "Tool result"
				if m.IsError {
					label = "Tool error"
				}
				b.WriteString(label + ": " + m.Text + "\n\n")
			}
		}
		if last != "" {
			b.WriteString("The user now says:\n\n")
		}
	}
	b.WriteString(last)
	return strings.TrimRight(b.String(), "\n")
}
