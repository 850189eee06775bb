package anthropic

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"conch/backend/provider"
	"conch/backend/provider/internal/sse"
	"conch/backend/provider/internal/wire"
)

// event is the data of one Messages API stream event; which fields are set
// depends on Type.
type event struct {
	Type    string `json:"type"`
	Message *struct {
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// wireUsage is the API's usage; a field left out keeps its earlier value.
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// toolBlock gathers one tool_use block's input.
type toolBlock struct {
	id, name string
	input    strings.Builder
}

// decoder turns a Messages API SSE stream into provider events.
type decoder struct {
	name       string
	classify   func(status int, h http.Header, ae apiError) error
	tools      map[int]*toolBlock
	usage      provider.Usage
	stopReason string
}

func newDecoder(name string, classify func(int, http.Header, apiError) error) *decoder {
	return &decoder{name: name, classify: classify, tools: map[int]*toolBlock{}}
}

// decode reads r to message_stop, passing text, tool calls and usage to emit
// as they complete, and returns the last event (DoneEvent or ErrorEvent). It
// stops early when emit returns false.
func (d *decoder) decode(r io.Reader, emit func(provider.Event) bool) provider.Event {
	sr := sse.NewReader(r)
	for {
		sev, err := sr.Next()
		if err != nil {
			return d.end(err)
		}
		data := bytes.TrimSpace(sev.Data)
		if len(data) == 0 {
			continue
		}
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			return wire.ErrorEvent(wire.Errorf(provider.ErrProtocol, "%s sent a part of its reply that is not JSON (%v): %s",
				d.name, err, wire.Shorten(string(data), 120)))
		}
		if ev.Type == "" {
			ev.Type = sev.Name
		}
		out, last := d.event(ev, data)
		if last != nil {
			return *last
		}
		for _, e := range out {
			if !emit(e) {
				return wire.ErrorEvent(wire.ErrStopped)
			}
		}
	}
}

// event handles one stream event: the events it gives to pass on, or the
// last event of the stream when it ends it. data is the event's JSON.
func (d *decoder) event(ev event, data []byte) (out []provider.Event, last *provider.Event) {
	switch ev.Type {
	case "message_start":
		if ev.Message != nil && ev.Message.Usage != nil {
			d.addUsage(ev.Message.Usage)
			out = append(out, d.usageEvent())
		}
	case "content_block_start":
		if b := ev.ContentBlock; b != nil {
			switch b.Type {
			case "text":
				if b.Text != "" {
					out = append(out, provider.Event{Kind: provider.TextDelta, Text: b.Text})
				}
			case "tool_use":
				d.tools[ev.Index] = &toolBlock{id: b.ID, name: b.Name}
			}
		}
	case "content_block_delta":
		if dl := ev.Delta; dl != nil {
			switch dl.Type {
			case "text_delta":
				if dl.Text != "" {
					out = append(out, provider.Event{Kind: provider.TextDelta, Text: dl.Text})
				}
			case "input_json_delta":
				if tb := d.tools[ev.Index]; tb != nil {
					tb.input.WriteString(dl.PartialJSON)
				}
			}
		}
	case "content_block_stop":
		if tb := d.tools[ev.Index]; tb != nil {
			delete(d.tools, ev.Index)
			call, err := d.toolCall(tb)
			if err != nil {
				failed := wire.ErrorEvent(err)
				return nil, &failed
			}
			out = append(out, provider.Event{Kind: provider.ToolCallEvent, Call: call})
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			d.stopReason = ev.Delta.StopReason
		}
		if ev.Usage != nil {
			d.addUsage(ev.Usage)
			out = append(out, d.usageEvent())
		}
	case "message_stop":
		return nil, &provider.Event{Kind: provider.DoneEvent, StopReason: d.stopReason}
	case "error":
		var ae apiError
		if len(ev.Error) > 0 {
			ae = parseAPIError(data)
		}
		failed := wire.ErrorEvent(d.classify(0, http.Header{}, ae))
		return nil, &failed
	}
	return out, nil
}

// end is the last event of a stream that ended before message_stop.
func (d *decoder) end(err error) provider.Event { return wire.Ended(d.name, err) }

// toolCall parses a finished tool_use block; no input at all is {}.
func (d *decoder) toolCall(tb *toolBlock) (*provider.ToolCall, error) {
	if tb.name == "" {
		return nil, wire.Errorf(provider.ErrProtocol, "%s asked for a tool without naming it.", d.name)
	}
	input := strings.TrimSpace(tb.input.String())
	if input == "" {
		input = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(input), &obj); err != nil || obj == nil {
		return nil, wire.Errorf(provider.ErrProtocol, "%s asked for tool %s with input that is not a JSON object: %s",
			d.name, tb.name, wire.Shorten(input, 120))
	}
	return &provider.ToolCall{ID: tb.id, Name: tb.name, Arguments: json.RawMessage(input)}, nil
}

// addUsage overwrites the counts u carries: the API's counts are cumulative.
func (d *decoder) addUsage(u *wireUsage) {
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	set(&d.usage.InputTokens, u.InputTokens)
	set(&d.usage.OutputTokens, u.OutputTokens)
	set(&d.usage.CacheWriteTokens, u.CacheCreationInputTokens)
	set(&d.usage.CacheReadTokens, u.CacheReadInputTokens)
}

func (d *decoder) usageEvent() provider.Event {
	u := d.usage
	return provider.Event{Kind: provider.UsageEvent, Usage: &u}
}
