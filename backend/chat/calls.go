package chat

import (
	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/procmark"
	"conch/backend/provider"
	"conch/backend/tool"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
)

// permit decides a coding agent's step as the gate would one of Conch's
// calls: it runs at once, is refused, or asks the person. A step that
// reads from outside taints the chat, as the guard would.
func (m *Manager) permit(ctx context.Context, e *entry, a provider.Action) (bool, error) {
	c := m.snapshot(e)
	for _, p := range a.Paths {
		if _, err := tool.Resolve(c.Cwd, p); err != nil {
			m.progress(e, Stepped, "Refused "+strings.TrimSuffix(a.Detail, "?")+": "+err.Error())
			return false, nil
		}
	}
	allowed := false
	switch Gate(c.Mode, tool.Effect(a.Effect), c.Tainted) {
	case Run:
		allowed = true
	case Refuse:
		m.progress(e, Stepped, "Refused "+strings.TrimSuffix(a.Detail, "?")+" in plan mode")
	case AskFirst:
		detail := a.Detail
		if c.Tainted {
			detail += " (the chat is tainted, so every side effect asks)"
		}
		switch m.ask(ctx, e, "", a.Tool, detail, agentChange(a.Write, c.Cwd)) {
		case ask.Allowed:
			allowed = true
		case ask.Stopped:
			return false, context.Cause(ctx)
		}
	}
	if allowed {
		if taints, why := agentTaints(a, c.Cwd); taints {
			m.taint(e, why)
		}
	}
	return allowed, nil
}

// agentTaints is the guard for a coding agent's step: a command is read as
// run_command would be, a step that reaches the network as fetch_url.
func agentTaints(a provider.Action, dir string) (bool, string) {
	switch {
	case a.Command != "":
		args, _ := json.Marshal(map[string]string{"command": a.Command})
		return Taints("run_command", args, dir)
	case a.Effect == string(tool.Network):
		what := a.URL
		if what == "" {
			what = a.Detail
		}
		return true, fmt.Sprintf("%s reached the network (%s)", a.Tool, what)
	}
	return false, ""
}

// agentTools are the tools a coding agent gets over MCP: Conch's own, not
// the host tools it has better versions of itself.
func (m *Manager) agentTools(tools tool.Set) tool.Set {
	out := tool.Set{}
	for name, t := range tools {
		if _, host := m.cfg.Tools[name]; !host {
			out[name] = t
		}
	}
	return out
}

// agentCall runs a tool a coding agent called over MCP: stored as a call
// and its result in the chat, through the gate, as an API model's would.
func (m *Manager) agentCall(ctx context.Context, e *entry, tools tool.Set, name string, args json.RawMessage) (string, bool) {
	call := provider.ToolCall{ID: "mcp_" + uuid.NewString(), Name: name, Arguments: args}
	if _, err := m.update(e, nil, m.callMessage(tools, call)); err != nil {
		return "Conch could not record the call: " + err.Error(), true
	}
	res := m.runCall(ctx, e, tools, call)
	_, _ = m.update(e, nil, m.resultMessage(res))
	return res.Output, res.IsError
}

// settleCalls records "stopped before it ran" for calls[from:], so the
// stored conversation never holds a call without its result.
func (m *Manager) settleCalls(e *entry, calls []provider.ToolCall, from int) {
	var msgs []conversation.Message
	for _, call := range calls[from:] {
		msgs = append(msgs, m.resultMessage(conversation.ToolResult{CallID: call.ID, Name: call.Name, Output: notRunText, IsError: true}))
	}
	if len(msgs) > 0 {
		_, _ = m.update(e, nil, msgs...)
	}
}

func (m *Manager) snapshot(e *entry) conversation.Conversation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.Clone()
}

func (m *Manager) callMessage(tools tool.Set, call provider.ToolCall) conversation.Message {
	msg := m.message(conversation.ToolCallKind)
	tc := &conversation.ToolCall{ID: call.ID, Name: call.Name, Arguments: validJSON(call.Arguments), Effect: string(tool.Network), Title: call.Name}
	if t, err := tools.Get(call.Name); err == nil {
		tc.Effect, tc.Title = string(t.Effect), t.Title(call.Arguments)
	}
	msg.ToolCall = tc
	return msg
}

// validJSON keeps arguments that are JSON and quotes the rest, so a model's
// broken arguments are stored (and shown) rather than refused by the
// encoder.
func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

func (m *Manager) resultMessage(r conversation.ToolResult) conversation.Message {
	msg := m.message(conversation.ToolResultKind)
	msg.ToolResult = &r
	return msg
}

// runCall puts one call through the gate (asking when it says so), runs
// it, and applies the guard.
func (m *Manager) runCall(ctx context.Context, e *entry, tools tool.Set, call provider.ToolCall) conversation.ToolResult {
	res := conversation.ToolResult{CallID: call.ID, Name: call.Name}
	fail := func(text string) conversation.ToolResult {
		res.Output, res.IsError = text, true
		return res
	}
	t, err := tools.Get(call.Name)
	if err != nil {
		return fail(err.Error())
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(validJSON(call.Arguments), &obj); err != nil || obj == nil {
		return fail(fmt.Sprintf("%s: the arguments must be a JSON object, got %s", call.Name, string(call.Arguments)))
	}
	c := m.snapshot(e)
	title := t.Title(call.Arguments)
	switch Gate(c.Mode, t.Effect, c.Tainted) {
	case Refuse:
		return fail(fmt.Sprintf("Refused: this chat is in plan mode, which only reads; %q (%s) was not run.", title, t.Effect))
	case AskFirst:
		detail := askDetail(title, call.Name, call.Arguments, c.Cwd)
		if c.Tainted {
			detail += " (the chat is tainted, so every side effect asks)"
		}
		switch m.ask(ctx, e, call.ID, call.Name, detail, askChange(call.Name, call.Arguments, c.Cwd)) {
		case ask.Allowed:
		case ask.Declined:
			return fail(declinedText)
		case ask.TimedOut:
			return fail(timedOutText)
		default:
			return fail(notRunText)
		}
		if ctx.Err() != nil {
			return fail(notRunText)
		}
		c = m.snapshot(e)
	}
	env := tool.Env{Dir: c.Cwd, HTTP: m.cfg.HTTP, Grace: m.cfg.CommandGrace, Mark: m.markOf(c)}
	if b := m.behalfOf(e); b != nil {
		env.Extra = b.Env
	}
	taskLog := m.taskLog(e)
	switch {
	case taskLog != nil:
		env.Log = taskLog
	case m.cfg.Logs != nil && t.Effect == tool.Command:
		if w, err := m.cfg.Logs.Open(c.ID); err == nil {
			defer w.Close()
			env.Log = w
		}
	}
	m.progress(e, Calling, title)
	out, err := t.Run(ctx, env, call.Arguments)
	m.progress(e, Called, title)
	if taskLog != nil && t.Effect != tool.Command {
		// A command wrote its own output as it ran; other tools' results
		// go to the task's log once they are in.
		logResult(taskLog, title, out, err)
	}
	if err != nil {
		res.Output, res.IsError = err.Error(), true
		if ctx.Err() != nil {
			res.Output = "Stopped while it ran."
			if out != "" {
				res.Output += " Its output so far:\n" + out
			}
		}
	} else {
		res.Output = out
	}
	if taints, why := Taints(call.Name, call.Arguments, c.Cwd); taints {
		m.taint(e, why)
	}
	return res
}

// markOf is what every process c starts carries.
func (m *Manager) markOf(c conversation.Conversation) procmark.Mark {
	return procmark.Mark{Home: m.cfg.HomeMark, Task: c.Origin.TaskID, Chat: c.ID}
}

// taskLog is the log of whom e's turn runs for, else nil.
func (m *Manager) taskLog(e *entry) io.Writer {
	if b := m.behalfOf(e); b != nil {
		return b.Output
	}
	return nil
}

// maxLoggedResult bounds what one tool's result adds to a task's log.
const maxLoggedResult = 16 << 10

// logResult appends a tool's result to a task's log under its title.
func logResult(w io.Writer, title, out string, err error) {
	if err != nil {
		out = err.Error()
	}
	if len(out) > maxLoggedResult {
		out = out[:maxLoggedResult] + fmt.Sprintf("\n… (%d bytes more)", len(out)-maxLoggedResult)
	}
	fmt.Fprintf(w, "\n› %s\n%s\n", title, strings.TrimRight(out, "\n"))
}
