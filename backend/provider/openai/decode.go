package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"conch/backend/provider"
	"conch/backend/provider/internal/sse"
	"conch/backend/provider/internal/wire"
)

// chunk is one streamed data line of Chat Completions.
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string      `json:"content"`
			ToolCalls []toolDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// wireUsage is what a reply used, in the final chunk.
type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	Cost float64 `json:"cost"` // OpenRouter
}

// usage converts u. Chat Completions counts cached tokens in prompt_tokens;
// Usage keeps them apart because they cost less.
func (u *wireUsage) usage() *provider.Usage {
	usage := &provider.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, CostUSD: u.Cost}
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens <= u.PromptTokens {
		usage.CacheReadTokens = u.PromptTokensDetails.CachedTokens
		usage.InputTokens -= usage.CacheReadTokens
	}
	return usage
}

// completion is a whole, unstreamed reply, which a few servers send even
// when asked to stream.
type completion struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content   string      `json:"content"`
			ToolCalls []toolDelta `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// whole decodes an unstreamed reply into the same events a stream gives.
func (d *decoder) whole(r io.Reader, emit func(provider.Event) bool) provider.Event {
	body, err := io.ReadAll(io.LimitReader(r, sse.MaxLine+1))
	if err != nil {
		return d.end(err)
	}
	if len(body) > sse.MaxLine {
		return d.end(sse.ErrLineTooLong)
	}
	var c completion
	if err := json.Unmarshal(body, &c); err != nil {
		return wire.ErrorEvent(wire.Errorf(provider.ErrProtocol, "%s sent a reply that is not JSON (%v): %s", d.name, err, wire.Shorten(string(body), 120)))
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		ae := parseErrorValue(c.Error)
		return wire.ErrorEvent(d.classify(ae.Status, http.Header{}, ae))
	}
	for _, choice := range c.Choices {
		if choice.Index != 0 {
			continue
		}
		if choice.Message.Content != "" && !emit(provider.Event{Kind: provider.TextDelta, Text: choice.Message.Content}) {
			return wire.ErrorEvent(wire.ErrStopped)
		}
		for _, td := range choice.Message.ToolCalls {
			acc := &callAcc{id: td.ID, name: td.Function.Name}
			acc.args.WriteString(argText(td.Function.Arguments))
			d.calls = append(d.calls, acc)
		}
		d.finish = choice.FinishReason
	}
	if final, ok := d.flush(emit); !ok {
		return final
	}
	if c.Usage != nil && !emit(provider.Event{Kind: provider.UsageEvent, Usage: c.Usage.usage()}) {
		return wire.ErrorEvent(wire.ErrStopped)
	}
	return provider.Event{Kind: provider.DoneEvent, StopReason: d.finish}
}

// toolDelta is one fragment of a streamed tool call.
type toolDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON string piece; a few servers send the object
		// itself, which is taken as is.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// callAcc gathers one tool call's fragments.
type callAcc struct {
	id, name string
	args     strings.Builder
}

// decoder turns a Chat Completions SSE stream into provider events.
type decoder struct {
	name     string
	classify func(status int, h http.Header, ae apiError) error
	calls    []*callAcc
	byIndex  map[int]*callAcc
	finish   string
	finished bool
}

func newDecoder(name string, classify func(int, http.Header, apiError) error) *decoder {
	return &decoder{name: name, classify: classify, byIndex: map[int]*callAcc{}}
}

// decode reads r to the end of the reply, passing text, tool calls and usage
// to emit as they complete, and returns the last event (DoneEvent or
// ErrorEvent). It stops early when emit returns false.
func (d *decoder) decode(r io.Reader, emit func(provider.Event) bool) provider.Event {
	sr := sse.NewReader(r)
	for {
		ev, err := sr.Next()
		if err != nil {
			return d.end(err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if string(data) == "[DONE]" {
			if final, ok := d.flush(emit); !ok {
				return final
			}
			return provider.Event{Kind: provider.DoneEvent, StopReason: d.finish}
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return wire.ErrorEvent(wire.Errorf(provider.ErrProtocol, "%s sent a part of its reply that is not JSON (%v): %s",
				d.name, err, wire.Shorten(string(data), 120)))
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			ae := parseErrorValue(c.Error)
			return wire.ErrorEvent(d.classify(ae.Status, http.Header{}, ae))
		}
		for _, choice := range c.Choices {
			if choice.Index != 0 {
				continue
			}
			if choice.Delta.Content != "" {
				if !emit(provider.Event{Kind: provider.TextDelta, Text: choice.Delta.Content}) {
					return wire.ErrorEvent(wire.ErrStopped)
				}
			}
			for _, td := range choice.Delta.ToolCalls {
				d.add(td)
			}
			if choice.FinishReason != "" {
				d.finish = choice.FinishReason
				d.finished = true
				if final, ok := d.flush(emit); !ok {
					return final
				}
			}
		}
		if u := c.Usage; u != nil {
			if !emit(provider.Event{Kind: provider.UsageEvent, Usage: u.usage()}) {
				return wire.ErrorEvent(wire.ErrStopped)
			}
		}
	}
}

// end is the last event of a stream that ended without [DONE]. After a
// finish_reason the reply is whole (some servers omit [DONE]); before it, the
// reply was cut off.
func (d *decoder) end(err error) provider.Event {
	switch {
	case errors.Is(err, io.EOF) && d.finished:
		return provider.Event{Kind: provider.DoneEvent, StopReason: d.finish}
	}
	return wire.Ended(d.name, err)
}

// add appends one fragment to its call. Fragments are keyed by index; a new
// id at a used index (servers that number every call 0) starts a new call.
func (d *decoder) add(td toolDelta) {
	var acc *callAcc
	if td.Index != nil {
		acc = d.byIndex[*td.Index]
		if acc != nil && td.ID != "" && acc.id != "" && td.ID != acc.id {
			acc = nil
		}
	} else if td.ID == "" && len(d.calls) > 0 {
		acc = d.calls[len(d.calls)-1]
	}
	if acc == nil {
		acc = &callAcc{}
		d.calls = append(d.calls, acc)
		if td.Index != nil {
			d.byIndex[*td.Index] = acc
		}
	}
	if td.ID != "" {
		acc.id = td.ID
	}
	if acc.name == "" {
		acc.name = td.Function.Name
	}
	acc.args.WriteString(argText(td.Function.Arguments))
}

// argText is an arguments value as text: a JSON string's contents, or
// the JSON itself when a server sent an object.
func argText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return ""
	case raw[0] == '"':
		var piece string
		if json.Unmarshal(raw, &piece) != nil {
			return ""
		}
		return piece
	}
	return string(raw)
}

// flush checks the gathered tool calls and emits them in order. It reports
// false with the last event when a call cannot be used or emit stopped.
func (d *decoder) flush(emit func(provider.Event) bool) (provider.Event, bool) {
	calls := make([]provider.ToolCall, 0, len(d.calls))
	for i, acc := range d.calls {
		if acc.name == "" {
			return wire.ErrorEvent(wire.Errorf(provider.ErrProtocol, "%s asked for a tool without naming it.", d.name)), false
		}
		args := strings.TrimSpace(acc.args.String())
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) {
			return wire.ErrorEvent(wire.Errorf(provider.ErrProtocol, "%s asked for tool %s with arguments that are not valid JSON: %s",
				d.name, acc.name, wire.Shorten(args, 120))), false
		}
		id := acc.id
		if id == "" {
			// Some local servers send no ids; a prefix of our own keeps
			// these apart from the ones other calls carry.
			id = fmt.Sprintf("conch_call_%d", i)
		}
		calls = append(calls, provider.ToolCall{ID: id, Name: acc.name, Arguments: json.RawMessage(args)})
	}
	d.calls = nil
	clear(d.byIndex)
	for i := range calls {
		if !emit(provider.Event{Kind: provider.ToolCallEvent, Call: &calls[i]}) {
			return wire.ErrorEvent(wire.ErrStopped), false
		}
	}
	return provider.Event{}, true
}
