package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/tool"
)

// Behalf is how a turn run for someone else (RunFor) differs from one the
// person started: the tools it has besides the host tools, when it is done,
// who hears what it does, where its questions go, and what its commands
// and model are given. A task's chat runs its task's turns this way.
type Behalf struct {
	// Tools are offered besides the host tools, in place of the offered
	// tool source's.
	Tools []tool.Tool
	// Done is asked after each step; true ends the turn there (what it
	// was run for is reported).
	Done func() bool
	// Progress hears what the turn does as it does it.
	Progress func(Progress)
	// Ask puts a question of the chat to the person through whoever the
	// turn runs for and waits for the answer: the same record, id and
	// expiry there and in the chat.
	Ask func(ctx context.Context, q ask.Question) ask.Answer
	// Answer answers the forwarded question askID (the same id in the
	// chat and there) from the chat's own Allow / Deny.
	Answer func(askID string, allow bool) error
	// Output is where the turn's commands' output, its tools' results and
	// its steps go (nil: the chat's own command log).
	Output io.Writer
	// Env holds KEY=VALUE pairs its commands and its coding agent get;
	// Prompt is told to its model besides.
	Env    []string
	Prompt string
}

// ProgressKind says what a Progress is.
type ProgressKind int

const (
	// Thinking: a model call begins.
	Thinking ProgressKind = iota
	// Calling: a tool call titled Text begins.
	Calling
	// Called: the tool call titled Text ended.
	Called
	// Stepped: a step that is over (a coding agent's own, or a refusal).
	Stepped
	// Waiting: what the provider says while the person waits (a retry).
	Waiting
)

// Progress is one thing a turn run on someone's behalf began or did.
type Progress struct {
	Kind ProgressKind
	Text string
}

// Turn says how a turn begins.
type Turn struct {
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
	// Left is the end of the log as the last turn left it: what a command
	// cut off when Conch stopped had printed.
	Left string
	// Tell, when set, is what the model is told first, as the person's
	// words (a check that failed, with the end of its output).
	Tell string
}

// freshNotice marks where a chat started over.
const freshNotice = "Tried again from the start: what came before is kept here, but not sent again."

// RunFor runs one turn of chat id in ctx, begun as turn says, on b's
// terms, and returns the turn's last reply. An error says why the turn did
// not finish (a *TurnError); it wraps the provider's error, so
// errors.Is(err, provider.ErrLimit) tells a limit.
func (m *Manager) RunFor(ctx context.Context, id string, turn Turn, b Behalf) (string, error) {
	if len(turn.Text) > maxText {
		return "", fmt.Errorf("%w: text is longer than %d bytes", ErrInvalid, maxText)
	}
	e, release, err := m.acquire(id)
	if err != nil {
		return "", err
	}
	defer release()
	tctx, err := m.beginFor(ctx, e, turn, b)
	if err != nil {
		return "", err
	}
	defer m.life.WG.Done()
	end := m.safeTurn(tctx, e)
	m.settle(e, end)
	if end.err != nil {
		return end.reply, &TurnError{Notice: end.notice, Err: end.err}
	}
	return end.reply, nil
}

// beginFor marks e replying for b and stores how the turn begins; the
// turn's context ends with ctx or with the manager.
func (m *Manager) beginFor(ctx context.Context, e *entry, turn Turn, b Behalf) (context.Context, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.life.Open() {
		return nil, errors.New("chats are not running (Conch is starting or closing)")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c.Host != "" {
		return nil, errOnHost(e.c)
	}
	if e.cancel != nil {
		return nil, fmt.Errorf("conversation %s is still replying: %w", e.c.ID, ErrConflict)
	}
	var msgs []conversation.Message
	fresh := turn.Fresh && e.c.LastSeq > 0
	if fresh {
		msgs = append(msgs, m.notice(freshNotice))
	}
	if strings.TrimSpace(turn.Text) != "" {
		msg := m.message(conversation.User)
		msg.Text = turn.Text
		msgs = append(msgs, msg)
	}
	if _, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		if fresh {
			c.HistoryFrom = c.LastSeq + 1 // the notice is the earlier try's last word
		}
		c.Running = true
		return nil
	}, msgs...); err != nil {
		return nil, err
	}
	e.resume, e.left, e.tell = turn.Resume, turn.Left, turn.Tell
	tctx, cancel := context.WithCancelCause(ctx)
	// Conch closing ends the turn as it ends every other.
	stop := context.AfterFunc(m.life.Context(), func() { cancel(context.Cause(m.life.Context())) })
	e.cancel = func(cause error) { stop(); cancel(cause) }
	e.done = make(chan struct{})
	e.behalf = &b
	m.life.WG.Add(1)
	return tctx, nil
}

// TurnError is why a turn did not finish: Notice is what its chat said
// ("Codex CLI reached its usage limit: …"), Err the cause beneath.
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

// behalfOf is whom e's running turn is run for, else nil.
func (m *Manager) behalfOf(e *entry) *Behalf {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.behalf
}

// progress tells whoever e's turn runs for what it does.
func (m *Manager) progress(e *entry, kind ProgressKind, text string) {
	if b := m.behalfOf(e); b != nil && b.Progress != nil {
		b.Progress(Progress{Kind: kind, Text: text})
	}
}

// toolsFor is the tool set of one turn of c: the host tools, plus what
// the turn's behalf brings (b set) or, in a turn the person started, what
// the tool source offers c.
func (m *Manager) toolsFor(c conversation.Conversation, b *Behalf) tool.Set {
	set := tool.Set{}
	for name, t := range m.cfg.Tools {
		set[name] = t
	}
	var extra []tool.Tool
	if b != nil {
		extra = b.Tools
	} else if src := m.toolSource(); src != nil {
		extra = src.Tools(c)
	}
	for _, t := range extra {
		set[t.Name] = t
	}
	return set
}

// done says whether the turn's behalf says it is over.
func done(b *Behalf) bool { return b != nil && b.Done != nil && b.Done() }
