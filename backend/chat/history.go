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
	c := m.snapshot(e)
	msgs, _, err := m.cfg.Store.Messages(c.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	h := &historian{open: map[string]bool{}}
	for _, msg := range msgs {
		if msg.Seq <= c.HistoryFrom {
			continue // an earlier try, kept in the chat but not sent
		}
		h.add(msg)
	}
	h.closeOpen()
	h.flushNews()
	return h.out, nil
}

// historian builds a history one stored message at a time.
type historian struct {
	out []provider.Message
	// open are the calls of the last assistant message, in order, and
	// whether each is still without a result.
	open      map[string]bool
	openOrder []string
	// news are finished tasks' results not yet told.
	news []string
}

func (h *historian) add(msg conversation.Message) {
	switch msg.Kind {
	case conversation.Notice:
		if msg.ForModel {
			h.user(msg.Text)
		}
	case conversation.User:
		h.user(msg.Text)
	case conversation.Assistant:
		h.closeOpen()
		h.out = append(h.out, provider.Message{Role: provider.Assistant, Text: msg.Text})
	case conversation.ToolCallKind:
		if msg.ToolCall != nil {
			h.call(provider.ToolCall{ID: msg.ToolCall.ID, Name: msg.ToolCall.Name, Arguments: msg.ToolCall.Arguments})
		}
	case conversation.ToolResultKind:
		r := msg.ToolResult
		if r == nil || !h.open[r.CallID] {
			return
		}
		h.open[r.CallID] = false
		h.out = append(h.out, provider.Message{Role: provider.ToolRole, ToolCallID: r.CallID, Text: r.Output, IsError: r.IsError})
		if !h.waiting() {
			h.flushNews()
		}
	case conversation.TaskEvent:
		// A background task's result is news for the model; it waits
		// until the calls it arrived among have their results.
		if ev := msg.TaskEvent; ev != nil && ev.Final {
			h.news = append(h.news, newsText(*ev))
			if !h.waiting() {
				h.flushNews()
			}
		}
	}
}

// user adds the person's words, joined to the last message if that was
// theirs too.
func (h *historian) user(text string) {
	h.closeOpen()
	if l := h.last(); l != nil && l.Role == provider.User {
		l.Text += "\n\n" + text
		return
	}
	h.out = append(h.out, provider.Message{Role: provider.User, Text: text})
}

// call adds a tool call to the assistant message it belongs to.
func (h *historian) call(call provider.ToolCall) {
	if l := h.last(); l != nil && l.Role == provider.Assistant && len(h.openOrder) == len(l.ToolCalls) {
		l.ToolCalls = append(l.ToolCalls, call)
	} else {
		h.closeOpen()
		h.out = append(h.out, provider.Message{Role: provider.Assistant, ToolCalls: []provider.ToolCall{call}})
	}
	h.open[call.ID] = true
	h.openOrder = append(h.openOrder, call.ID)
}

func (h *historian) last() *provider.Message {
	if len(h.out) == 0 {
		return nil
	}
	return &h.out[len(h.out)-1]
}

// waiting says a call of the last assistant message still has no result.
func (h *historian) waiting() bool {
	for _, o := range h.open {
		if o {
			return true
		}
	}
	return false
}

func (h *historian) flushNews() {
	for _, n := range h.news {
		if l := h.last(); l != nil && l.Role == provider.User {
			l.Text += "\n\n" + n
			continue
		}
		h.out = append(h.out, provider.Message{Role: provider.User, Text: n})
	}
	h.news = nil
}

// closeOpen gives the calls still without a result "Stopped before it
// ran." and tells the news that waited for them.
func (h *historian) closeOpen() {
	for _, cid := range h.openOrder {
		if h.open[cid] {
			h.out = append(h.out, provider.Message{Role: provider.ToolRole, ToolCallID: cid, Text: notRunText, IsError: true})
		}
	}
	h.open, h.openOrder = map[string]bool{}, nil
	h.flushNews()
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
