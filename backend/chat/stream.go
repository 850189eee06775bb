package chat

import (
	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/provider"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

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
	s := &streaming{m: m, e: e, res: streamed{messageID: uuid.NewString()}, convID: m.snapshot(e).ID}
	ch, err := p.Stream(ctx, req)
	if err != nil {
		s.res.err = err
		return s.res
	}
	tick := time.NewTicker(m.cfg.DeltaInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			go drain(ch)
			return s.end(context.Cause(ctx))
		case <-tick.C:
			s.flush()
		case ev, ok := <-ch:
			if !ok {
				return s.end(fmt.Errorf("%w: %s", provider.ErrProtocol, streamEndedText))
			}
			if s.take(ev) {
				go drain(ch)
				return s.res
			}
		}
	}
}

// streaming is one provider call as it streams.
type streaming struct {
	m           *Manager
	e           *entry
	res         streamed
	convID      string
	text, piece strings.Builder
}

// flush publishes the text that came since the last flush.
func (s *streaming) flush() {
	if s.piece.Len() == 0 {
		return
	}
	s.m.cfg.Bus.Publish(event.Event{Type: event.MessageDelta, Delta: &event.Delta{
		ConversationID: s.convID, MessageID: s.res.messageID, Text: s.piece.String(),
	}})
	s.piece.Reset()
}

// end ends the call with err (nil: it finished), keeping the text so far.
func (s *streaming) end(err error) streamed {
	s.flush()
	s.res.text = s.text.String()
	s.res.err = err
	return s.res
}

// take keeps one event; true when the call is over.
func (s *streaming) take(ev provider.Event) bool {
	switch ev.Kind {
	case provider.TextDelta:
		s.text.WriteString(ev.Text)
		s.piece.WriteString(ev.Text)
	case provider.ToolCallEvent:
		if ev.Call != nil {
			call := *ev.Call
			if call.ID == "" {
				call.ID = "call_" + uuid.NewString()
			}
			s.res.calls = append(s.res.calls, call)
		}
	case provider.StepEvent, provider.NoticeEvent:
		if err := s.step(ev); err != nil {
			s.res.err = fmt.Errorf("save a step: %w", err)
			s.res.text = s.text.String()
			return true
		}
	case provider.UsageEvent:
		if ev.Usage != nil {
			u := *ev.Usage
			s.res.usage = &u
		}
	case provider.DoneEvent:
		s.end(nil)
		return true
	case provider.ErrorEvent:
		err := ev.Err
		if err == nil {
			err = errors.New("unknown error")
		}
		s.end(err)
		return true
	}
	return false
}

// step shows a coding agent's own step as it happens; so does what it says
// while the person waits (a retry).
func (s *streaming) step(ev provider.Event) error {
	if ev.Text == "" {
		return nil
	}
	m, e := s.m, s.e
	if ev.Kind == provider.NoticeEvent {
		m.progress(e, Waiting, ev.Text)
	} else {
		m.progress(e, Stepped, ev.Text)
	}
	if w := m.taskLog(e); w != nil {
		fmt.Fprintf(w, "› %s\n", ev.Text)
	}
	step := m.message(conversation.Step)
	step.Text = ev.Text
	_, err := m.update(e, nil, step)
	return err
}

// drain empties a stream that is no longer read, so a provider that sends
// after its end (or after a stop) never blocks on it.
func drain(ch <-chan provider.Event) {
	for range ch {
	}
}
