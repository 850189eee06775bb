package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/procmark"
	"conch/backend/provider"
	"conch/backend/task"
	"conch/backend/tool"
)

// Words the model reads when a call did not run.
const (
	declinedText    = "The person declined, so it did not run."
	timedOutText    = "No answer within the ask timeout, so it did not run."
	notRunText      = "Stopped before it ran."
	stoppedNotice   = "Stopped."
	closingNotice   = "Stopped: Conch is closing."
	noProviderText  = "Pick a provider for this chat to get a reply."
	streamEndedText = "the reply ended without saying it was done"
)

// turn runs one turn to its end and settles the conversation.
func (m *Manager) turn(ctx context.Context, e *entry) {
	defer m.wg.Done()
	defer m.release(e) // the hold startTurnLocked took for it
	end := m.safeTurn(ctx, e)
	m.settle(e, end)
}

// safeTurn is runTurn, with a panic (a bug in Conch or a provider) ending
// the turn with a notice instead of the process.
func (m *Manager) safeTurn(ctx context.Context, e *entry) (end turnEnd) {
	defer func() {
		if v := recover(); v != nil {
			m.cfg.Log.Error("chat turn panicked", "conversation", m.snapshot(e).ID, "panic", v, "stack", string(debug.Stack()))
			err := fmt.Errorf("internal error: %v", v)
			end = failed(fmt.Sprintf("Conch hit an internal error in this reply (%v), so it stopped it. Send again to carry on.", v), err)
		}
	}()
	return m.runTurn(ctx, e)
}

// settle ends the running turn: the closing notice, if any, is stored
// together with running = false. A wake that came in while the turn ran
// starts the next turn at once.
func (m *Manager) settle(e *entry, end turnEnd) {
	e.mu.Lock()
	var msgs []conversation.Message
	if end.notice != "" {
		msg := m.notice(end.notice)
		msg.Limit = end.limit
		msgs = append(msgs, msg)
	}
	_, _ = m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Running, c.Ask = false, nil
		return nil
	}, msgs...)
	e.cancel(nil)
	e.cancel = nil
	e.hooks = nil
	close(e.done)
	wake, id := e.wake, e.c.ID
	e.wake = false
	e.mu.Unlock()
	if wake {
		_ = m.Wake(id) // refused only when Conch is closing
	}
}

// turnEnd is how a turn ended.
type turnEnd struct {
	// notice is said in the chat ("" when the model simply finished).
	notice string
	// err is why the turn did not finish (nil when it did).
	err error
	// reply is the turn's last assistant text.
	reply string
	// report is the summary given with report_result, if it was called.
	report *string
	// limit is set when a provider's usage limit ended the turn.
	limit *conversation.LimitNotice
}

// failed is a turn that ended early, notice saying why.
func failed(notice string, err error) turnEnd {
	if err == nil {
		err = errors.New(notice)
	}
	return turnEnd{notice: notice, err: err}
}

// stopReason is the notice for a turn whose ctx ended.
func stopReason(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errClosing) {
		return closingNotice
	}
	return stoppedNotice
}

// runTurn calls the provider and runs the tools it asks for until it stops
// asking, reports (a task), the step limit, the budget, an error or a stop.
func (m *Manager) runTurn(ctx context.Context, e *entry) (end turnEnd) {
	defer func() {
		if end.err == nil && end.notice == "" && ctx.Err() != nil {
			end = failed(stopReason(ctx), context.Cause(ctx))
		}
	}()
	c := m.snapshot(e)
	tools, report := m.toolsFor(c, m.hooksOf(e) != nil)
	e.mu.Lock()
	notice, left, tell := e.resume, e.left, e.tell
	e.resume, e.left, e.tell = "", "", ""
	e.mu.Unlock()
	if notice != "" {
		if end, ok := m.resume(ctx, e, tools, notice, left); !ok {
			return end
		}
	}
	if tell != "" {
		msg := m.notice(tell)
		msg.ForModel = true
		if _, err := m.update(e, nil, msg); err != nil {
			return failed("Could not save the chat: "+err.Error(), err)
		}
	}
	history, err := m.history(e)
	if err != nil {
		return failed("Could not read this chat: "+err.Error(), err)
	}
	extraPrompt := ""
	if src := m.toolSource(); src != nil {
		extraPrompt = src.Prompt(ctx, c)
	}
	var taskEnv []string
	if h := m.hooksOf(e); h != nil {
		taskEnv = h.Env
		if h.Prompt != "" {
			extraPrompt += "\n\n" + h.Prompt
		}
	}
	var info provider.Info
	infoOf, reply := "", ""
	for step := 0; ; step++ {
		if ctx.Err() != nil {
			return failed(stopReason(ctx), context.Cause(ctx))
		}
		c = m.snapshot(e)
		if step >= m.cfg.StepLimit {
			return failed(fmt.Sprintf("Stopped after %d steps, the most one reply may take. Send a message to carry on.", m.cfg.StepLimit), nil)
		}
		if l := m.overLimit(c); l != nil {
			return failed(l.Message, l)
		}
		if l, err := m.overMonth(); err != nil {
			return failed("Could not read this month's spend: "+err.Error(), err)
		} else if l != nil {
			return failed(l.Message, l)
		}
		if c.Provider == "" {
			return failed(noProviderText, nil)
		}
		p, ok := m.cfg.Providers.Provider(c.Provider)
		if !ok {
			return failed(fmt.Sprintf("The provider %q is not connected. Pick another one for this chat.", c.Provider), provider.ErrNotReady)
		}
		// Info may probe (a CLI's auth status): ask once per turn, and
		// again only when the chat's provider changes.
		if infoOf != c.Provider {
			info, infoOf = p.Info(ctx), c.Provider
		}
		if ctx.Err() != nil { // stopped while the provider was asked how it stands
			return failed(stopReason(ctx), context.Cause(ctx))
		}
		if !info.Ready {
			reason := info.Reason
			if reason == "" {
				reason = "it gave no reason"
			}
			return failed(fmt.Sprintf("%s is not ready: %s", name(info, c.Provider), reason), fmt.Errorf("%w: %s", provider.ErrNotReady, reason))
		}
		model := c.Model
		if model == "" {
			model = info.Models.Default
		}
		m.progress(e, "Thinking", "")
		req := provider.Request{
			Model: model, System: systemPrompt(c) + extraPrompt, Messages: history, Tools: tools.Specs(),
			Mode: c.Mode, Cwd: c.Cwd, Mark: m.markOf(c), Env: taskEnv,
			// A coding agent runs its own tools; each of its steps comes
			// here first, to the same gate and guard as Conch's tools.
			Ask: func(ctx context.Context, a provider.Action) (bool, error) {
				return m.permit(ctx, e, a)
			},
		}
		if info.Category == provider.CodingAgent {
			// A coding agent runs its own tools (files, commands) and has
			// only Conch's own over MCP: the hand-off tools, or a task's
			// report_result, run here through the gate like any call. Its
			// prompt speaks of nothing else.
			offered := m.agentTools(tools)
			req.System = agentPrompt(c, offered) + extraPrompt
			req.Tools = offered.Specs()
			req.Call = func(ctx context.Context, name string, args json.RawMessage) (string, bool) {
				return m.agentCall(ctx, e, offered, name, args)
			}
		}
		res := m.stream(ctx, e, p, req)
		cost := 0.0
		if res.usage != nil && info.Category != provider.LocalModel {
			prices := m.cfg.Prices
			if m.cfg.Spending != nil {
				prices = Prices(m.cfg.Spending.Prices())
			}
			cost = prices.Cost(model, *res.usage)
		}
		if cost > 0 && m.cfg.Spending != nil {
			if err := m.cfg.Spending.Spend(cost); err != nil {
				return failed("Could not record this month's spend: "+err.Error(), err)
			}
		}
		var msgs []conversation.Message
		if w := m.taskLog(e); w != nil && res.text != "" {
			fmt.Fprintf(w, "\n%s\n", strings.TrimRight(res.text, "\n"))
		}
		if res.text != "" {
			msg := m.message(conversation.Assistant)
			msg.ID, msg.Text = res.messageID, res.text
			msgs = append(msgs, msg)
			reply = res.text
		}
		for _, call := range res.calls {
			msgs = append(msgs, m.callMessage(tools, call))
		}
		if len(msgs) > 0 || cost > 0 {
			if _, err := m.update(e, func(c *conversation.Conversation) error {
				c.Spent += cost
				return nil
			}, msgs...); err != nil {
				return failed("Could not save the reply: "+err.Error(), err)
			}
			m.spendParent(c, cost)
		}
		if res.text != "" || len(res.calls) > 0 {
			history = append(history, provider.Message{Role: provider.Assistant, Text: res.text, ToolCalls: res.calls})
		}
		if res.err != nil {
			// Calls that came before the failure never run; say so, so no
			// call is left without a result.
			m.settleCalls(e, res.calls, 0)
			if ctx.Err() != nil {
				return failed(stopReason(ctx), context.Cause(ctx))
			}
			end := failed(providerNotice(name(info, c.Provider), res.err), res.err)
			end.limit = limitNotice(c.Provider, name(info, c.Provider), res.err)
			return end
		}
		if len(res.calls) == 0 {
			if report.summary != nil { // a coding agent reported over MCP
				return turnEnd{reply: reply, report: report.summary}
			}
			return turnEnd{reply: reply}
		}
		for i, call := range res.calls {
			if ctx.Err() != nil {
				m.settleCalls(e, res.calls, i)
				return failed(stopReason(ctx), context.Cause(ctx))
			}
			result := m.runCall(ctx, e, tools, call)
			if _, err := m.update(e, nil, m.resultMessage(result)); err != nil {
				return failed("Could not save a tool's result: "+err.Error(), err)
			}
			history = append(history, provider.Message{
				Role: provider.ToolRole, ToolCallID: call.ID, Text: result.Output, IsError: result.IsError,
			})
		}
		if report.summary != nil {
			return turnEnd{reply: reply, report: report.summary}
		}
	}
}

// resume begins a resumed task's turn (SPEC §3 Resume): of the calls its
// last turn left without a result, one whose question was pending never
// ran, so it goes through the gate again (the question is asked again);
// the one that was running is never run again on its own: its result says
// Conch stopped while it ran, with what it had printed (from left), and
// the calls after it did not run. Then the model is told what happened,
// and decides. ok is false when the turn ends here.
func (m *Manager) resume(ctx context.Context, e *entry, tools tool.Set, notice, left string) (turnEnd, bool) {
	open, err := m.openCalls(e)
	if err != nil {
		return failed("Could not read this chat: "+err.Error(), err), false
	}
	calls := make([]provider.ToolCall, len(open))
	for i, o := range open {
		calls[i] = o.call
	}
	cut := false
	for i, o := range open {
		if ctx.Err() != nil {
			m.settleCalls(e, calls, i)
			return failed(stopReason(ctx), context.Cause(ctx)), false
		}
		var result conversation.ToolResult
		switch {
		case cut: // queued behind the call that was cut off: it never began
			result = conversation.ToolResult{CallID: o.call.ID, Name: o.call.Name, Output: notRunText, IsError: true}
		case o.asking:
			result = m.runCall(ctx, e, tools, o.call)
		default:
			result, cut = cutOff(o.call, left), true
		}
		if _, err := m.update(e, nil, m.resultMessage(result)); err != nil {
			return failed("Could not save a tool's result: "+err.Error(), err), false
		}
	}
	msg := m.notice(notice)
	msg.ForModel = true
	if _, err := m.update(e, nil, msg); err != nil {
		return failed("Could not save the chat: "+err.Error(), err), false
	}
	return turnEnd{}, true
}

// openCall is a call the chat's last turn left without a result.
type openCall struct {
	call provider.ToolCall
	// asking is true when it was waiting on its question (asked, and not
	// allowed before Conch stopped): it never ran.
	asking bool
}

// openCalls are the calls of the chat's last assistant message that have
// no result, in order: the turn that made them was cut off.
func (m *Manager) openCalls(e *entry) ([]openCall, error) {
	c := m.snapshot(e)
	msgs, _, err := m.cfg.Store.Messages(c.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	var open []openCall
	for _, msg := range msgs {
		if msg.Seq <= c.HistoryFrom {
			continue
		}
		switch {
		case msg.Kind == conversation.ToolCallKind && msg.ToolCall != nil:
			open = append(open, openCall{call: provider.ToolCall{ID: msg.ToolCall.ID, Name: msg.ToolCall.Name, Arguments: msg.ToolCall.Arguments}})
		case msg.Kind == conversation.AskKind && msg.Ask != nil && msg.Ask.CallID != "":
			// The question, then how it was settled: only an allowed one
			// let its call run.
			for i := range open {
				if open[i].call.ID == msg.Ask.CallID {
					open[i].asking = msg.Ask.Answer != ask.Allowed
				}
			}
		case msg.Kind == conversation.ToolResultKind && msg.ToolResult != nil:
			open = slices.DeleteFunc(open, func(o openCall) bool { return o.call.ID == msg.ToolResult.CallID })
		case msg.Kind == conversation.User || msg.Kind == conversation.Assistant:
			open = nil // calls before a new message were settled by it
		}
	}
	return open, nil
}

// permit decides a coding agent's step as the gate would one of Conch's
// calls: it runs at once, is refused, or asks the person. A step that
// reads from outside taints the chat, as the guard would.
func (m *Manager) permit(ctx context.Context, e *entry, a provider.Action) (bool, error) {
	c := m.snapshot(e)
	for _, p := range a.Paths {
		if _, err := tool.Resolve(c.Cwd, p); err != nil {
			m.progress(e, "", "Refused "+strings.TrimSuffix(a.Detail, "?")+": "+err.Error())
			return false, nil
		}
	}
	allowed := false
	switch Gate(c.Mode, tool.Effect(a.Effect), c.Tainted) {
	case Run:
		allowed = true
	case Refuse:
		m.progress(e, "", "Refused "+strings.TrimSuffix(a.Detail, "?")+" in plan mode")
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

func name(info provider.Info, id string) string {
	if info.Name != "" {
		return info.Name
	}
	return id
}

// limitNotice is what the chat records of a usage limit in err, or nil
// when err is not one.
func limitNotice(id, who string, err error) *conversation.LimitNotice {
	if !errors.Is(err, provider.ErrLimit) {
		return nil
	}
	n := &conversation.LimitNotice{Provider: id, Name: who}
	var lim *provider.LimitError
	if errors.As(err, &lim) {
		n.Message = lim.Message
		if !lim.Until.IsZero() {
			u := lim.Until.UTC()
			n.Until = &u
		}
	}
	return n
}

// providerNotice says why a provider call failed, in the person's words.
func providerNotice(who string, err error) string {
	var lim *provider.LimitError
	switch {
	case errors.As(err, &lim) && !lim.Until.IsZero():
		return fmt.Sprintf("%s reached its usage limit until %s: %s", who, lim.Until.UTC().Format(time.RFC3339), lim.Message)
	case errors.As(err, &lim):
		return fmt.Sprintf("%s reached its usage limit: %s", who, lim.Message)
	case errors.Is(err, provider.ErrLimit):
		return fmt.Sprintf("%s reached its usage limit: %v", who, err)
	case errors.Is(err, provider.ErrOverload):
		return fmt.Sprintf("%s is overloaded; try again shortly. (%v)", who, err)
	case errors.Is(err, provider.ErrAuth):
		return fmt.Sprintf("%s refused the credentials: %v", who, err)
	case errors.Is(err, provider.ErrNotReady):
		return fmt.Sprintf("%s is not ready: %v", who, err)
	}
	return fmt.Sprintf("%s failed: %v", who, err)
}

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

// streamed is what one provider call gave.
type streamed struct {
	messageID string
	text      string
	calls     []provider.ToolCall
	usage     *provider.Usage
	err       error
}

// stream makes one provider call, publishing text as it arrives (pieces
// coalesced every DeltaInterval). A cancelled ctx ends it at once, with
// what arrived so far.
func (m *Manager) stream(ctx context.Context, e *entry, p provider.Provider, req provider.Request) streamed {
	res := streamed{messageID: uuid.NewString()}
	ch, err := p.Stream(ctx, req)
	if err != nil {
		res.err = err
		return res
	}
	convID := m.snapshot(e).ID
	var text, piece strings.Builder
	flush := func() {
		if piece.Len() == 0 {
			return
		}
		m.cfg.Bus.Publish(event.Event{Type: event.MessageDelta, Delta: &event.Delta{
			ConversationID: convID, MessageID: res.messageID, Text: piece.String(),
		}})
		piece.Reset()
	}
	tick := time.NewTicker(m.cfg.DeltaInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			flush()
			res.text = text.String()
			res.err = context.Cause(ctx)
			go drain(ch)
			return res
		case <-tick.C:
			flush()
		case ev, ok := <-ch:
			if !ok {
				flush()
				res.text = text.String()
				res.err = fmt.Errorf("%w: %s", provider.ErrProtocol, streamEndedText)
				return res
			}
			switch ev.Kind {
			case provider.TextDelta:
				text.WriteString(ev.Text)
				piece.WriteString(ev.Text)
			case provider.ToolCallEvent:
				if ev.Call != nil {
					call := *ev.Call
					if call.ID == "" {
						call.ID = "call_" + uuid.NewString()
					}
					res.calls = append(res.calls, call)
				}
			case provider.StepEvent, provider.NoticeEvent:
				// A coding agent's own step shows as it happens; so does
				// what it says while the person waits (a retry).
				if ev.Text != "" {
					if ev.Kind == provider.NoticeEvent {
						m.progress(e, ev.Text, "")
					} else {
						m.progress(e, "", ev.Text)
					}
					if w := m.taskLog(e); w != nil {
						fmt.Fprintf(w, "› %s\n", ev.Text)
					}
					step := m.message(conversation.Step)
					step.Text = ev.Text
					if _, err := m.update(e, nil, step); err != nil {
						res.err = fmt.Errorf("save a step: %w", err)
						res.text = text.String()
						go drain(ch)
						return res
					}
				}
			case provider.UsageEvent:
				if ev.Usage != nil {
					u := *ev.Usage
					res.usage = &u
				}
			case provider.DoneEvent, provider.ErrorEvent:
				flush()
				res.text = text.String()
				if ev.Kind == provider.ErrorEvent {
					res.err = ev.Err
					if res.err == nil {
						res.err = errors.New("unknown error")
					}
				}
				go drain(ch)
				return res
			}
		}
	}
}

// drain empties a stream that is no longer read, so a provider that sends
// after its end (or after a stop) never blocks on it.
func drain(ch <-chan provider.Event) {
	for range ch {
	}
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
	if h := m.hooksOf(e); h != nil {
		env.Extra = h.Env
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
	m.progress(e, present(title), "")
	out, err := t.Run(ctx, env, call.Arguments)
	m.progress(e, "", past(title))
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

// hooksOf is e's task hooks while RunTask runs its task's turn, else nil.
func (m *Manager) hooksOf(e *entry) *TaskHooks {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hooks
}

// taskLog is the task's output log while e runs a task's turn, else nil.
func (m *Manager) taskLog(e *entry) io.Writer {
	if h := m.hooksOf(e); h != nil {
		return h.Output
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

// askDetail is what the person reads when asked: the whole command for
// run_command (a title is cut short), the call's title otherwise.
func askDetail(title, name string, args json.RawMessage, cwd string) string {
	if name == "run_command" {
		var a struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(args, &a) == nil && a.Command != "" {
			return "Run `" + a.Command + "` in " + cwd
		}
	}
	return title
}

// askChange is the file write a question about call shows: the file as it
// is and as it would be (write_file), or the piece replaced (edit_file);
// nil for any other call or arguments it cannot read.
func askChange(name string, args json.RawMessage, cwd string) *ask.Change {
	switch name {
	case "write_file":
		var a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if json.Unmarshal(args, &a) != nil || a.Path == "" {
			return nil
		}
		p, err := tool.Resolve(cwd, a.Path)
		if err != nil {
			return nil
		}
		before, isNew := readForChange(p)
		return ask.NewChange(a.Path, before, a.Content, isNew)
	case "edit_file":
		var a struct {
			Path string `json:"path"`
			Old  string `json:"old"`
			New  string `json:"new"`
		}
		if json.Unmarshal(args, &a) != nil || a.Path == "" {
			return nil
		}
		return ask.NewChange(a.Path, a.Old, a.New, false)
	}
	return nil
}

// agentChange is the change a coding agent's edit step would make, for
// its question (nil when the CLI did not say).
func agentChange(w *provider.Write, cwd string) *ask.Change {
	if w == nil || w.Path == "" {
		return nil
	}
	if !w.Whole {
		return ask.NewChange(w.Path, w.Old, w.New, false)
	}
	p, err := tool.Resolve(cwd, w.Path)
	if err != nil {
		return nil
	}
	before, isNew := readForChange(p)
	return ask.NewChange(w.Path, before, w.New, isNew)
}

// readForChange reads a regular file's start (a little over what a Change
// keeps), reporting a file that is not there as new.
func readForChange(p string) (string, bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b, _ := io.ReadAll(io.LimitReader(f, ask.MaxChange+1))
	return string(b), false
}

// taint marks the chat tainted (once) and says why in a notice.
func (m *Manager) taint(e *entry, why string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c.Tainted {
		return
	}
	_, _ = m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Tainted = true
		return nil
	}, m.notice("This chat is now tainted: "+why+". Every side effect asks first until you clear it."))
}

// ask puts a question in the chat and waits for Answer, the timeout or ctx.
// In a task's chat the task asks instead (it becomes needs-you, and the
// approval inbox, the notification and the chat can all answer it).
func (m *Manager) ask(ctx context.Context, e *entry, callID, toolName, detail string, change *ask.Change) ask.Answer {
	now := m.cfg.Now().UTC()
	q := ask.New(uuid.NewString(), callID, toolName, detail, now, m.cfg.AskTimeout)
	q.Change = change
	answer := make(chan bool, 1)
	msg := m.message(conversation.AskKind)
	msg.Ask = &q
	e.mu.Lock()
	var forward func(ctx context.Context, q ask.Question) ask.Answer
	if e.hooks != nil && e.hooks.Ask != nil {
		forward = e.hooks.Ask
	}
	_, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		qc := q
		c.Ask = &qc
		return nil
	}, msg)
	if err == nil {
		if forward != nil {
			e.fwd = q.ID
		} else {
			e.ask = &pending{id: q.ID, answer: answer}
		}
	}
	e.mu.Unlock()
	if err != nil {
		return ask.Stopped
	}
	if forward != nil {
		ans := forward(ctx, q)
		e.mu.Lock()
		defer e.mu.Unlock()
		e.fwd = ""
		_, _ = m.updateLocked(e, func(c *conversation.Conversation) error {
			c.Ask = nil
			return nil
		}, m.answerMessage(q, ans))
		return ans
	}
	timer := time.NewTimer(m.cfg.AskTimeout)
	defer timer.Stop()
	settle := ask.Stopped
	select {
	case allow := <-answer:
		return verdict(allow)
	case <-ctx.Done():
	case <-timer.C:
		settle = ask.TimedOut
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ask == nil || e.ask.id != q.ID { // answered at the same moment: the answer wins
		return verdict(<-answer)
	}
	e.ask = nil
	_, _ = m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Ask = nil
		return nil
	}, m.answerMessage(q, settle))
	return settle
}

func verdict(allow bool) ask.Answer {
	if allow {
		return ask.Allowed
	}
	return ask.Declined
}

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
