package agentcli

import (
	"encoding/json"
	"fmt"
	"strings"

	"conch/backend/provider"
)

// codexItem is a thread item, as item/started and item/completed give it.
type codexItem struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Command  string `json:"command"`
	Status   string `json:"status"`
	ExitCode *int   `json:"exitCode"`
	Changes  []struct {
		Path string `json:"path"`
		Kind struct {
			Type string `json:"type"`
		} `json:"kind"`
		// Diff is a new or deleted file's text, else the unified diff.
		Diff string `json:"diff"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Query  string `json:"query"`
}

// notify reads codex's notifications of the turn: its reply's text, its
// items starting and completing, its usage, its retries and its end.
func (s *codexSession) notify(method string, params json.RawMessage) error {
	switch method {
	case "item/agentMessage/delta":
		s.agentText(params)
	case "item/started":
		s.itemStarted(params)
	case "item/completed":
		s.itemCompleted(params)
	case "thread/tokenUsage/updated":
		s.tokenUsage(params)
	case "error":
		s.retrying(params)
	case "turn/completed":
		var p struct {
			Turn codexTurn `json:"turn"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return fmt.Errorf("%w: codex turn/completed: %v", provider.ErrProtocol, err)
		}
		select {
		case s.turnDone <- p.Turn:
		default:
		}
	}
	return nil
}

// agentText sends a piece of the reply's text.
func (s *codexSession) agentText(params json.RawMessage) {
	var p struct {
		ItemID string `json:"itemId"`
		Delta  string `json:"delta"`
	}
	if json.Unmarshal(params, &p) != nil || p.Delta == "" {
		return
	}
	s.mu.Lock()
	text := p.Delta
	// The messages of one reply do not run together.
	if p.ItemID != s.lastText && s.wrote {
		text = "\n\n" + text
	}
	s.lastText, s.wrote = p.ItemID, true
	s.mu.Unlock()
	s.e.text(text)
}

// itemStarted keeps a started item, for its approval and for settle.
func (s *codexSession) itemStarted(params json.RawMessage) {
	var p struct {
		Item codexItem `json:"item"`
	}
	if json.Unmarshal(params, &p) != nil || p.Item.ID == "" {
		return
	}
	s.mu.Lock()
	if _, seen := s.items[p.Item.ID]; !seen {
		s.order = append(s.order, p.Item.ID)
	}
	s.items[p.Item.ID] = p.Item
	s.mu.Unlock()
}

// itemCompleted shows a completed item's step, unless settle already did.
func (s *codexSession) itemCompleted(params json.RawMessage) {
	var p struct {
		Item codexItem `json:"item"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	shown := s.settled[p.Item.ID]
	delete(s.items, p.Item.ID)
	s.mu.Unlock()
	if !shown {
		s.e.step(s.completed(p.Item))
	}
	select {
	case s.completedOne <- struct{}{}:
	default:
	}
}

// tokenUsage sends the thread's usage so far.
func (s *codexSession) tokenUsage(params json.RawMessage) {
	var p struct {
		TokenUsage struct {
			Total struct {
				Input  int `json:"inputTokens"`
				Cached int `json:"cachedInputTokens"`
				Output int `json:"outputTokens"`
			} `json:"total"`
		} `json:"tokenUsage"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	t := p.TokenUsage.Total
	// OpenAI counts cached input within the input.
	s.e.usage(provider.Usage{InputTokens: max(t.Input-t.Cached, 0), CacheReadTokens: t.Cached, OutputTokens: t.Output})
}

// retrying shows an error codex will retry as a notice; the last one,
// which it will not retry, comes again in turn/completed.
func (s *codexSession) retrying(params json.RawMessage) {
	var p struct {
		Error     codexFail `json:"error"`
		WillRetry bool      `json:"willRetry"`
	}
	if json.Unmarshal(params, &p) == nil && p.WillRetry {
		s.e.notice(codexRetry(p.Error))
	}
}

// completed is the step a finished item shows, "" for none.
func (s *codexSession) completed(it codexItem) string {
	switch it.Type {
	case "commandExecution":
		cmd := shorten(unwrapShell(it.Command))
		switch {
		case it.Status == "declined":
			return s.declined(it.ID, "Run `"+cmd+"`?")
		case it.ExitCode != nil && *it.ExitCode != 0:
			return fmt.Sprintf("Ran %s (exit %d)", cmd, *it.ExitCode)
		}
		return "Ran " + cmd
	case "fileChange":
		if it.Status == "declined" {
			return s.declined(it.ID, "Edit "+s.paths(it)+"?")
		}
		return "Edited " + s.paths(it)
	case "webSearch":
		return "Searched the web for " + shorten(it.Query)
	case "mcpToolCall":
		if it.Server == "conch" {
			return "" // Conch's own tools show as their calls
		}
		return "Used " + it.Server + "." + it.Tool
	}
	return ""
}

// declined is the step of an item the gate said no to, in the words it
// was asked in.
func (s *codexSession) declined(id, fallback string) string {
	s.mu.Lock()
	detail, ok := s.asked[id]
	s.mu.Unlock()
	if !ok {
		detail = fallback
	}
	return declinedStep(detail)
}

func (s *codexSession) paths(it codexItem) string {
	var paths []string
	for _, ch := range it.Changes {
		paths = append(paths, relPath(s.req.Cwd, ch.Path))
	}
	return shorten(strings.Join(paths, ", "))
}
