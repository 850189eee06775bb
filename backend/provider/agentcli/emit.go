package agentcli

import (
	"context"

	"conch/backend/provider"
)

// emitter sends events that are not the last; once ctx is done they are
// dropped, since nobody need be reading.
type emitter struct {
	ctx context.Context
	out chan<- provider.Event
}

func (e emitter) emit(ev provider.Event) {
	select {
	case e.out <- ev:
	case <-e.ctx.Done():
	}
}

func (e emitter) text(s string) {
	if s != "" {
		e.emit(provider.Event{Kind: provider.TextDelta, Text: s})
	}
}

func (e emitter) step(s string) {
	if s != "" {
		e.emit(provider.Event{Kind: provider.StepEvent, Text: s})
	}
}

func (e emitter) notice(s string) {
	if s != "" {
		e.emit(provider.Event{Kind: provider.NoticeEvent, Text: s})
	}
}

func (e emitter) usage(u provider.Usage) {
	e.emit(provider.Event{Kind: provider.UsageEvent, Usage: &u})
}
