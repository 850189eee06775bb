package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/provider"
	"conch/backend/store"
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
	defer m.life.WG.Done()
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
	c, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Running, c.Ask = false, nil
		return nil
	}, msgs...)
	if err == nil && e.behalf == nil {
		m.recordTurn(c, e.began, e.spentFrom, end)
	}
	e.cancel(nil)
	e.cancel = nil
	e.behalf = nil
	close(e.done)
	wake, id := e.wake, e.c.ID
	e.wake = false
	e.mu.Unlock()
	if wake {
		_ = m.Wake(id) // refused only when Conch is closing
	}
}

// recordTurn keeps a turn nobody else ran for Activity: a task's turns
// are its task's.
func (m *Manager) recordTurn(c conversation.Conversation, began time.Time, spentFrom float64, end turnEnd) {
	t := store.Turn{Conversation: c.ID, Provider: c.Provider, Model: c.Model, StartedAt: began, EndedAt: m.cfg.Now().UTC(),
		Outcome: "done", Notice: end.notice, Spent: max(c.Spent-spentFrom, 0)}
	switch {
	case end.err == nil:
	case errors.Is(end.err, errStopped) || errors.Is(end.err, errClosing) || end.notice == stoppedNotice || end.notice == closingNotice:
		t.Outcome = "stopped"
	default:
		t.Outcome = "failed"
	}
	if err := m.cfg.Store.PutTurn(t); err != nil {
		m.cfg.Log.Error("record a turn", "conversation", c.ID, "err", err)
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
// asking, its behalf is done (a task reported), the step limit, the
// budget, an error or a stop.
func (m *Manager) runTurn(ctx context.Context, e *entry) (end turnEnd) {
	defer func() {
		if end.err == nil && end.notice == "" && ctx.Err() != nil {
			end = failed(stopReason(ctx), context.Cause(ctx))
		}
	}()
	t, end, ok := m.openTurn(ctx, e)
	if !ok {
		return end
	}
	for step := 0; ; step++ {
		res, end, ok := t.call(ctx, step)
		if !ok {
			return end
		}
		if len(res.calls) == 0 {
			return turnEnd{reply: t.reply}
		}
		for i, call := range res.calls {
			if ctx.Err() != nil {
				m.settleCalls(e, res.calls, i)
				return failed(stopReason(ctx), context.Cause(ctx))
			}
			result := m.runCall(ctx, e, t.tools, call)
			if _, err := m.update(e, nil, m.resultMessage(result)); err != nil {
				return failed("Could not save a tool's result: "+err.Error(), err)
			}
			t.history = append(t.history, provider.Message{
				Role: provider.ToolRole, ToolCallID: call.ID, Text: result.Output, IsError: result.IsError,
			})
		}
		if done(t.b) {
			return turnEnd{reply: t.reply}
		}
	}
}

// liveTurn is what one running turn carries from step to step.
type liveTurn struct {
	m       *Manager
	e       *entry
	b       *Behalf // whom it runs for; nil in a turn the person started
	tools   tool.Set
	history []provider.Message
	prompt  string   // added to the system prompt
	env     []string // its commands' and coding agent's extra environment
	info    provider.Info
	infoOf  string // the provider info was asked of
	reply   string // the last assistant text
}

// openTurn readies a turn: its tools, what a resumed or told turn says
// first, the history and the extra prompt. ok is false when it ends here.
func (m *Manager) openTurn(ctx context.Context, e *entry) (*liveTurn, turnEnd, bool) {
	c := m.snapshot(e)
	t := &liveTurn{m: m, e: e, b: m.behalfOf(e)}
	t.tools = m.toolsFor(c, t.b)
	e.mu.Lock()
	notice, left, tell := e.resume, e.left, e.tell
	e.resume, e.left, e.tell = "", "", ""
	e.mu.Unlock()
	if notice != "" {
		if end, ok := m.resume(ctx, e, t.tools, notice, left); !ok {
			return nil, end, false
		}
	}
	if tell != "" {
		msg := m.notice(tell)
		msg.ForModel = true
		if _, err := m.update(e, nil, msg); err != nil {
			return nil, failed("Could not save the chat: "+err.Error(), err), false
		}
	}
	history, err := m.history(e)
	if err != nil {
		return nil, failed("Could not read this chat: "+err.Error(), err), false
	}
	t.history = history
	if src := m.toolSource(); src != nil {
		t.prompt = src.Prompt(ctx, c)
	}
	if t.b != nil {
		t.env = t.b.Env
		if t.b.Prompt != "" {
			t.prompt += "\n\n" + t.b.Prompt
		}
	}
	return t, turnEnd{}, true
}

// call makes the turn's model call of this step and keeps what it said;
// ok is false when the turn ends here.
func (t *liveTurn) call(ctx context.Context, step int) (streamed, turnEnd, bool) {
	m, e := t.m, t.e
	c := m.snapshot(e)
	p, model, end, ok := t.ready(ctx, c, step)
	if !ok {
		return streamed{}, end, false
	}
	m.progress(e, Thinking, "")
	res := m.stream(ctx, e, p, t.request(c, model))
	if end, ok := t.keep(c, model, res); !ok {
		return res, end, false
	}
	if res.err != nil {
		// Calls that came before the failure never run; say so, so no
		// call is left without a result.
		m.settleCalls(e, res.calls, 0)
		if ctx.Err() != nil {
			return res, failed(stopReason(ctx), context.Cause(ctx)), false
		}
		who := name(t.info, c.Provider)
		end := failed(providerNotice(who, res.err), res.err)
		end.limit = limitNotice(c.Provider, who, res.err)
		return res, end, false
	}
	return res, turnEnd{}, true
}

// ready checks that the step may call the model (not stopped, within the
// step and spend limits, a provider ready) and gives the provider and the
// model to call.
func (t *liveTurn) ready(ctx context.Context, c conversation.Conversation, step int) (provider.Provider, string, turnEnd, bool) {
	m := t.m
	no := func(end turnEnd) (provider.Provider, string, turnEnd, bool) { return nil, "", end, false }
	if ctx.Err() != nil {
		return no(failed(stopReason(ctx), context.Cause(ctx)))
	}
	if step >= m.cfg.StepLimit {
		return no(failed(fmt.Sprintf("Stopped after %d steps, the most one reply may take. Send a message to carry on.", m.cfg.StepLimit), nil))
	}
	if l := m.limitOf(c); l != nil {
		return no(failed(l.Message, l))
	}
	if l, err := m.OverMonth(); err != nil {
		return no(failed("Could not read this month's spend: "+err.Error(), err))
	} else if l != nil {
		return no(failed(l.Message, l))
	}
	if c.Provider == "" {
		return no(failed(noProviderText, nil))
	}
	p, ok := m.cfg.Providers.Provider(c.Provider)
	if !ok {
		return no(failed(fmt.Sprintf("The provider %q is not connected. Pick another one for this chat.", c.Provider), provider.ErrNotReady))
	}
	// Info may probe (a CLI's auth status): ask once per turn, and again
	// only when the chat's provider changes.
	if t.infoOf != c.Provider {
		t.info, t.infoOf = p.Info(ctx), c.Provider
	}
	if ctx.Err() != nil { // stopped while the provider was asked how it stands
		return no(failed(stopReason(ctx), context.Cause(ctx)))
	}
	if !t.info.Ready {
		reason := t.info.Reason
		if reason == "" {
			reason = "it gave no reason"
		}
		return no(failed(fmt.Sprintf("%s is not ready: %s", name(t.info, c.Provider), reason), fmt.Errorf("%w: %s", provider.ErrNotReady, reason)))
	}
	model := c.Model
	if model == "" {
		model = t.info.Models.Default
	}
	return p, model, turnEnd{}, true
}

// request is the step's model call.
func (t *liveTurn) request(c conversation.Conversation, model string) provider.Request {
	m, e := t.m, t.e
	req := provider.Request{
		Model: model, System: systemPrompt(c) + t.prompt, Messages: t.history, Tools: t.tools.Specs(),
		Mode: c.Mode, Cwd: c.Cwd, Mark: m.markOf(c), Env: t.env,
		// A coding agent runs its own tools; each of its steps comes here
		// first, to the same gate and guard as Conch's tools.
		Ask: func(ctx context.Context, a provider.Action) (bool, error) {
			return m.permit(ctx, e, a)
		},
	}
	if t.info.Category == provider.CodingAgent {
		// A coding agent runs its own tools (files, commands) and has only
		// Conch's own over MCP: the hand-off tools, or what its behalf
		// brings (a task's report_result), run here through the gate like
		// any call. Its prompt speaks of nothing else.
		offered := m.agentTools(t.tools)
		req.System = agentPrompt(c, offered) + t.prompt
		req.Tools = offered.Specs()
		req.Call = func(ctx context.Context, name string, args json.RawMessage) (string, bool) {
			return m.agentCall(ctx, e, offered, name, args)
		}
	}
	return req
}

// keep prices and stores what the model call gave (its text, its calls,
// what it cost) and adds it to the history.
func (t *liveTurn) keep(c conversation.Conversation, model string, res streamed) (turnEnd, bool) {
	m, e := t.m, t.e
	cost := 0.0
	if res.usage != nil && t.info.Category != provider.LocalModel {
		prices := m.cfg.Prices
		if m.cfg.Spending != nil {
			prices = Prices(m.cfg.Spending.Prices())
		}
		cost = prices.Cost(model, *res.usage)
	}
	if cost > 0 && m.cfg.Spending != nil {
		if err := m.cfg.Spending.Spend(cost); err != nil {
			return failed("Could not record this month's spend: "+err.Error(), err), false
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
		t.reply = res.text
	}
	for _, call := range res.calls {
		msgs = append(msgs, m.callMessage(t.tools, call))
	}
	if len(msgs) > 0 || cost > 0 {
		if _, err := m.update(e, func(c *conversation.Conversation) error {
			c.Spent += cost
			return nil
		}, msgs...); err != nil {
			return failed("Could not save the reply: "+err.Error(), err), false
		}
		m.spendParent(c, cost)
	}
	if res.text != "" || len(res.calls) > 0 {
		t.history = append(t.history, provider.Message{Role: provider.Assistant, Text: res.text, ToolCalls: res.calls})
	}
	return turnEnd{}, true
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
