package chat

import (
	"conch/backend/conversation"
	"conch/backend/provider"
	"conch/backend/task"
	"fmt"
)

// history rebuilds what the provider is sent from the stored messages:
// user text, assistant text with its tool calls, tool results. Notices,
// asks and task events are for the person. A call left without a result
// gets "Stopped before it ran.", and consecutive user messages are joined,
// so every provider accepts the history.
func (m *Manager) history(e *entry) ([]provider.Message, error) {
	id := m.snapshot(e).ID
	msgs, _, err := m.cfg.Store.Messages(id, 0, 0)
	if err != nil {
		return nil, err
	}
	var out []provider.Message
	open := map[string]bool{} // calls of the last assistant message still without a result
	var openOrder []string
	// waiting says a call of the last assistant message still has no result.
	waiting := func() bool {
		for _, o := range open {
			if o {
				return true
			}
		}
		return false
	}
	var news []string // finished tasks' results not yet told
	flushNews := func() {
		for _, n := range news {
			if l := len(out); l > 0 && out[l-1].Role == provider.User {
				out[l-1].Text += "\n\n" + n
				continue
			}
			out = append(out, provider.Message{Role: provider.User, Text: n})
		}
		news = nil
	}
	closeOpen := func() {
		for _, cid := range openOrder {
			if open[cid] {
				out = append(out, provider.Message{Role: provider.ToolRole, ToolCallID: cid, Text: notRunText, IsError: true})
			}
		}
		open, openOrder = map[string]bool{}, nil
		flushNews()
	}
	last := func() *provider.Message {
		if len(out) == 0 {
			return nil
		}
		return &out[len(out)-1]
	}
	from := m.snapshot(e).HistoryFrom
	for _, msg := range msgs {
		if msg.Seq <= from {
			continue // an earlier try, kept in the chat but not sent
		}
		switch msg.Kind {
		case conversation.Notice:
			if !msg.ForModel {
				continue
			}
			closeOpen()
			if l := last(); l != nil && l.Role == provider.User {
				l.Text += "\n\n" + msg.Text
				continue
			}
			out = append(out, provider.Message{Role: provider.User, Text: msg.Text})
		case conversation.User:
			closeOpen()
			if l := last(); l != nil && l.Role == provider.User {
				l.Text += "\n\n" + msg.Text
				continue
			}
			out = append(out, provider.Message{Role: provider.User, Text: msg.Text})
		case conversation.Assistant:
			closeOpen()
			out = append(out, provider.Message{Role: provider.Assistant, Text: msg.Text})
		case conversation.ToolCallKind:
			if msg.ToolCall == nil {
				continue
			}
			call := provider.ToolCall{ID: msg.ToolCall.ID, Name: msg.ToolCall.Name, Arguments: msg.ToolCall.Arguments}
			if l := last(); l != nil && l.Role == provider.Assistant && len(openOrder) == len(l.ToolCalls) {
				l.ToolCalls = append(l.ToolCalls, call)
			} else {
				closeOpen()
				out = append(out, provider.Message{Role: provider.Assistant, ToolCalls: []provider.ToolCall{call}})
			}
			open[call.ID] = true
			openOrder = append(openOrder, call.ID)
		case conversation.ToolResultKind:
			r := msg.ToolResult
			if r == nil || !open[r.CallID] {
				continue
			}
			open[r.CallID] = false
			out = append(out, provider.Message{Role: provider.ToolRole, ToolCallID: r.CallID, Text: r.Output, IsError: r.IsError})
			if !waiting() {
				flushNews()
			}
		case conversation.TaskEvent:
			// A background task's result is news for the model; it waits
			// until the calls it arrived among have their results.
			if ev := msg.TaskEvent; ev != nil && ev.Final {
				news = append(news, newsText(*ev))
				if !waiting() {
					flushNews()
				}
			}
		}
	}
	closeOpen()
	flushNews()
	return out, nil
}

// newsText is how the model hears of a finished background task.
func newsText(ev conversation.TaskUpdate) string {
	switch {
	case ev.Status == task.Done:
		return fmt.Sprintf("[The background task %q finished. Its result:]\n\n%s", ev.Title, ev.Summary)
	case ev.Error != "":
		return fmt.Sprintf("[The background task %q ended %s: %s]", ev.Title, ev.Status, ev.Error)
	}
	return fmt.Sprintf("[The background task %q ended %s.]", ev.Title, ev.Status)
}
