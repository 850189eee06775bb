package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"conch/backend/ask"
	"conch/backend/budget"
	"conch/backend/conversation"
	"conch/backend/task"
	"conch/backend/tool"
)

// ReportTool is the tool only a task's chat has: the task says what came
// of its work, and its turn ends.
const ReportTool = "report_result"

// TaskHooks connect a task's chat to its task while RunTask runs.
type TaskHooks struct {
	// Progress says what the task is doing now and what it did (past
	// tense); either may be empty.
	Progress func(current, step string)
	// Ask puts a question of the task's chat to the person through the
	// task (it becomes needs-you) and waits for the answer: the same record,
	// id and expiry on the task and in the chat.
	Ask func(ctx context.Context, q ask.Question) ask.Answer
	// Answer answers the task's pending question askID (the same id in the
	// chat and on the task) from the chat's own Allow / Deny.
	Answer func(askID string, allow bool) error
	// Output is the task's log: its commands' output, its tools' results
	// and its steps go there (nil: the chat's own command log).
	Output io.Writer
	// Env holds KEY=VALUE pairs its commands and its coding agent get (a
	// helper's CONCH_PORT); Prompt is told to its model besides.
	Env    []string
	Prompt string
}

// TaskResult is what a task's turn came to.
type TaskResult struct {
	Summary string
	// Source is task.SourceReport (report_result) or task.SourceTurn (the
	// turn's last reply).
	Source task.ResultSource
}

// TaskTurn says how a turn of a task's chat begins.
type TaskTurn struct {
	// Text is added as the person's message ("" adds none: the turn
	// carries on from where the chat stands).
	Text string
	// Fresh starts the model's history over: an earlier try stays in the
	// chat, under a notice, but the model does not see it.
	Fresh bool
	// Resume, when set, is what the model is told first, as the person's
	// words: what happened and to carry on. Of the calls the last turn
	// left without a result, one whose question was pending never ran and
	// is asked again; one that was running is never run again on its own:
	// its result says Conch stopped while it ran, with what it had printed
	// (from Left), and the model decides (SPEC §3 Resume).
	Resume string
	// Left is the end of the task's log as its last run left it: what a
	// command cut off when Conch stopped had printed.
	Left string
	// Tell, when set, is what the model is told first, as the person's
	// words (a check that failed, with the end of its output).
	Tell string
}

// freshNotice marks where a task's chat started over.
const freshNotice = "Tried again from the start: what came before is kept here, but not sent again."

// RunTask runs one turn of a task's chat in ctx, the task's own context,
// begun as turn says. It returns the report_result summary, else the
// turn's last reply. An error says why the turn did not finish; it wraps
// the provider's error, so errors.Is(err, provider.ErrLimit) tells a limit.
func (m *Manager) RunTask(ctx context.Context, id string, turn TaskTurn, hooks TaskHooks) (TaskResult, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return TaskResult{}, err
	}
	defer release()
	text := turn.Text
	if len(text) > maxText {
		return TaskResult{}, fmt.Errorf("%w: text is longer than %d bytes", ErrInvalid, maxText)
	}
	m.mu.Lock()
	if !m.started || m.closed {
		m.mu.Unlock()
		return TaskResult{}, errors.New("chats are not running (Conch is starting or closing)")
	}
	e.mu.Lock()
	if e.cancel != nil {
		e.mu.Unlock()
		m.mu.Unlock()
		return TaskResult{}, fmt.Errorf("conversation %s is still replying: %w", id, ErrConflict)
	}
	var msgs []conversation.Message
	fresh := turn.Fresh && e.c.LastSeq > 0
	if fresh {
		msgs = append(msgs, m.notice(freshNotice))
	}
	if strings.TrimSpace(text) != "" {
		msg := m.message(conversation.User)
		msg.Text = text
		msgs = append(msgs, msg)
	}
	if _, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		if c.Title == "" {
			c.Title = task.TitleFrom(text)
		}
		if fresh {
			c.HistoryFrom = c.LastSeq + 1 // the notice is the earlier try's last word
		}
		c.Running = true
		return nil
	}, msgs...); err != nil {
		e.mu.Unlock()
		m.mu.Unlock()
		return TaskResult{}, err
	}
	e.resume, e.left, e.tell = turn.Resume, turn.Left, turn.Tell
	tctx, cancel := context.WithCancelCause(ctx)
	// Conch closing ends the task's turn as it ends every other.
	stopWithManager := context.AfterFunc(m.ctx, func() { cancel(context.Cause(m.ctx)) })
	e.cancel, e.done = cancel, make(chan struct{})
	h := hooks
	e.hooks = &h
	m.wg.Add(1)
	e.mu.Unlock()
	m.mu.Unlock()

	defer m.wg.Done()
	end := m.safeTurn(tctx, e)
	stopWithManager()
	m.settle(e, end)
	switch {
	case end.report != nil:
		return TaskResult{Summary: *end.report, Source: task.SourceReport}, nil
	case end.err != nil:
		return TaskResult{Summary: end.reply}, &TurnError{Notice: end.notice, Err: end.err}
	}
	return TaskResult{Summary: end.reply, Source: task.SourceTurn}, nil
}

// TurnError is why a task's turn did not finish: Notice is what its chat
// said ("Codex CLI reached its usage limit: …"), Err the cause beneath.
type TurnError struct {
	Notice string
	Err    error
}

func (e *TurnError) Error() string {
	if e.Notice != "" {
		return e.Notice
	}
	return e.Err.Error()
}

func (e *TurnError) Unwrap() error { return e.Err }

// reporting collects the summary a task's turn reports.
type reporting struct {
	summary *string
}

// toolsFor is the tool set of one turn of c: the host tools, plus
// report_result while a task's chat runs its task (asTask), or the extra
// tools (start a background task, delegate) in the person's chats. A turn
// the person starts in a finished task's chat has neither: its report
// would change nothing.
func (m *Manager) toolsFor(c conversation.Conversation, asTask bool) (tool.Set, *reporting) {
	set := maps.Clone(m.cfg.Tools)
	rep := &reporting{}
	if c.Origin.Kind == conversation.FromTask {
		if asTask {
			set[ReportTool] = reportTool(rep)
		}
		return set, rep
	}
	if src := m.toolSource(); src != nil {
		for _, t := range src.Tools(c) {
			set[t.Name] = t
		}
	}
	return set, rep
}

// maxSummary bounds what a task reports.
const maxSummary = 64 << 10

func reportTool(rep *reporting) tool.Tool {
	return tool.Tool{
		Name: ReportTool,
		Description: "End your task by reporting what came of it: a short summary of what you did and found, " +
			"for the chat that sent you. Call it once, when the work is done; your turn ends with it.",
		Schema: tool.ObjectSchema([]string{"summary"}, `"summary":{"type":"string","description":"What you did and what came of it, in a few sentences or a short list."}`),
		Effect: tool.None,
		Title:  func(json.RawMessage) string { return "Reported the result" },
		Run: func(_ context.Context, _ tool.Env, args json.RawMessage) (string, error) {
			var a struct {
				Summary string `json:"summary"`
			}
			if err := tool.Decode(ReportTool, args, &a, "summary"); err != nil {
				return "", err
			}
			if len(a.Summary) > maxSummary {
				return "", fmt.Errorf("%s: the summary is longer than %d bytes; shorten it", ReportTool, maxSummary)
			}
			s := strings.TrimSpace(a.Summary)
			rep.summary = &s
			return "Reported. Your task is done; stop here.", nil
		},
	}
}

// progress tells a running task what its chat is doing.
func (m *Manager) progress(e *entry, current, step string) {
	e.mu.Lock()
	h := e.hooks
	e.mu.Unlock()
	if h != nil && h.Progress != nil {
		h.Progress(current, step)
	}
}

// verbs turn a call's title ("Run go test") into what a task is doing now
// and, once done, what it did.
var verbs = []struct{ do, doing, did string }{
	{"Run ", "Running ", "Ran "},
	{"Read ", "Reading ", "Read "},
	{"List ", "Listing ", "Listed "},
	{"Write ", "Writing ", "Wrote "},
	{"Edit ", "Editing ", "Edited "},
	{"Fetch ", "Fetching ", "Fetched "},
	{"Searched for ", "Searching for ", "Searched for "},
}

func present(title string) string {
	for _, v := range verbs {
		if rest, ok := strings.CutPrefix(title, v.do); ok {
			return v.doing + rest
		}
	}
	return title
}

func past(title string) string {
	for _, v := range verbs {
		if rest, ok := strings.CutPrefix(title, v.do); ok {
			return v.did + rest
		}
	}
	return title
}

// ErrSpendLimit is a turn stopped before a model call because its chat,
// its job (a delegate's helpers together) or the month has spent what it
// may. A task pauses on it and carries on once it may spend again.
var ErrSpendLimit = errors.New("spend limit reached")

// Spend limits, by what reached its limit.
const (
	LimitChat  = "chat"
	LimitJob   = "job"
	LimitMonth = "month"
)

// SpendLimitError says which limit was reached, in the person's words.
type SpendLimitError struct {
	// Kind is LimitChat, LimitJob or LimitMonth.
	Kind    string
	Message string
	// Until is when it lifts by itself (a new month); zero when the
	// person must raise it.
	Until time.Time
}

func (e *SpendLimitError) Error() string        { return e.Message }
func (e *SpendLimitError) Is(target error) bool { return target == ErrSpendLimit }

// OverLimit says why the chat id may spend no more, or nil when it may:
// its own limit (a task's chat spends as part of the chat it came from,
// so that chat's limit holds), its job's cap, the monthly budget.
func (m *Manager) OverLimit(id string) (*SpendLimitError, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return nil, err
	}
	defer release()
	if l := m.overLimit(m.snapshot(e)); l != nil {
		return l, nil
	}
	return m.overMonth()
}

// overMonth is the monthly budget's limit, or nil.
func (m *Manager) overMonth() (*SpendLimitError, error) {
	if m.cfg.Spending == nil {
		return nil, nil
	}
	why, err := m.cfg.Spending.Exceeded()
	if err != nil || why == "" {
		return nil, err
	}
	now := m.cfg.Now()
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, now.Location())
	return &SpendLimitError{Kind: LimitMonth, Message: "Stopped: " + why, Until: next}, nil
}

// overLimit is c's own limit or its job's cap, or nil.
func (m *Manager) overLimit(c conversation.Conversation) *SpendLimitError {
	if c.JobCap > 0 {
		if spent := m.jobSpent(c.JobID); spent >= c.JobCap {
			return &SpendLimitError{Kind: LimitJob, Message: fmt.Sprintf("Stopped: this job's helpers have spent %s of its %s cap. Raise the cap (Carry on) to go on.", budget.USD(spent), budget.USD(c.JobCap))}
		}
	}
	if c.Origin.ParentID != "" {
		if p, err := m.Snapshot(c.Origin.ParentID); err == nil {
			if p.Limit > 0 && p.Spent >= p.Limit {
				return &SpendLimitError{Kind: LimitChat, Message: fmt.Sprintf("Stopped: the chat this came from has spent %s of its %s limit. Raise its limit to carry on.", budget.USD(p.Spent), budget.USD(p.Limit))}
			}
			return nil
		}
	}
	if c.Limit > 0 && c.Spent >= c.Limit {
		return &SpendLimitError{Kind: LimitChat, Message: fmt.Sprintf("Stopped: this chat has spent %s of its %s limit. Raise the limit to carry on.", budget.USD(c.Spent), budget.USD(c.Limit))}
	}
	return nil
}

// jobSpent is what the chats of job id have spent together, as stored
// (every change is stored before it is kept in memory).
func (m *Manager) jobSpent(id string) float64 {
	if id == "" {
		return 0
	}
	cs, err := m.cfg.Store.ChatsInJob(id)
	if err != nil {
		m.cfg.Log.Error("read a job's chats", "job", id, "err", err)
		return 0
	}
	total := 0.0
	for _, c := range cs {
		total += c.Spent
	}
	return total
}

// RaiseJobCap raises the cap of the job chat id belongs to by what it was
// (once more of the same), for the person's Carry on; it returns the new
// cap. A chat of no job gives 0 and changes nothing.
func (m *Manager) RaiseJobCap(id string) (float64, error) {
	c, err := m.Snapshot(id)
	if err != nil {
		return 0, err
	}
	if c.JobID == "" || c.JobCap <= 0 {
		return 0, nil
	}
	next := c.JobCap * 2
	cs, err := m.cfg.Store.ChatsInJob(c.JobID)
	if err != nil {
		return 0, fmt.Errorf("raise the cap of job %s: %w", c.JobID, err)
	}
	for _, x := range cs {
		o, release, err := m.acquire(x.ID)
		if err != nil {
			return 0, err
		}
		_, err = m.update(o, func(x *conversation.Conversation) error { x.JobCap = next; return nil })
		release()
		if err != nil {
			return 0, err
		}
	}
	return next, nil
}

// spendParent adds what a task's chat spent to the chat it came from.
func (m *Manager) spendParent(c conversation.Conversation, cost float64) {
	if cost <= 0 || c.Origin.ParentID == "" {
		return
	}
	if pe, release, err := m.acquire(c.Origin.ParentID); err == nil {
		_, _ = m.update(pe, func(p *conversation.Conversation) error {
			p.Spent += cost
			return nil
		})
		release()
	}
}

// Snapshot returns the conversation as it stands now.
func (m *Manager) Snapshot(id string) (conversation.Conversation, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return conversation.Conversation{}, err
	}
	defer release()
	return m.snapshot(e), nil
}

// PostTaskEvent appends a task's status change to the chat it came from.
func (m *Manager) PostTaskEvent(id string, ev conversation.TaskUpdate) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	msg := m.message(conversation.TaskEvent)
	msg.TaskEvent = &ev
	_, err = m.update(e, nil, msg)
	return err
}

// Taint marks a chat tainted, saying why (once: a tainted chat stays as it
// is).
func (m *Manager) Taint(id, why string) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	m.taint(e, why)
	return nil
}

// Tell adds text to chat id as a notice its model reads too, as the
// person's words, outside any turn (a task's check that failed for the
// last time): the transcript keeps it for a later turn, a resumed task's.
func (m *Manager) Tell(id, text string) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	msg := m.notice(text)
	msg.ForModel = true
	_, err = m.update(e, nil, msg)
	return err
}

// Wake gives a chat's assistant one turn to read what came back (a
// finished task's result is already in the chat). If a turn runs, the wake
// turn follows it.
func (m *Manager) Wake(id string) error {
	e, release, err := m.acquire(id)
	if err != nil {
		return err
	}
	defer release()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started || m.closed {
		return errors.New("chats are not running (Conch is starting or closing)")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		e.wake = true
		return nil
	}
	return m.startTurnLocked(e)
}
