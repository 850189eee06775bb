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
						m.progress(e, Waiting, ev.Text)
					} else {
						m.progress(e, Stepped, ev.Text)
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
