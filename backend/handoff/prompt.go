package handoff

import (
	"context"
	"fmt"
	"strings"
	"time"

	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/provider"
)

// Prompt adds to the system prompt of c's turns (the chat engine's
// Prompt): a task's chat is told how to end its work; the person's chats
// learn which other providers could take a part.
func (s *Service) Prompt(ctx context.Context, c conversation.Conversation) string {
	if c.Origin.IsRun() {
		return "\n\nYou are doing a task handed off from another chat; nobody is watching as you work. " +
			"Do the work with your tools, then call report_result once with a short summary of what you did and found. " +
			"That summary is all the other chat will see."
	}
	var lines []string
	for _, e := range s.recentEngines(ctx) {
		if e.ID == c.Provider {
			continue
		}
		state := ""
		switch {
		case !e.Info.Ready:
			state = ", not ready now"
		case !e.Info.CanAsk:
			state = ", cannot take parts (it cannot ask before acting)"
		}
		lines = append(lines, fmt.Sprintf("- %s (%s): %s%s", e.ID, e.Name(), category(e.Info.Category), state))
	}
	b := "\n\nYou can hand work off: start_background_task when the person asks for something to be done in the background; " +
		"delegate to split a job into parts that helpers do side by side. Helpers run in this chat's mode and folder."
	if s.cfg.Routines != nil {
		b += " schedule_routine makes a routine when the person wants work done again and again (\"every weekday at 9\"): each run is a task of its own, in this chat's mode and folder."
	}
	if len(lines) == 0 {
		return b + " No other provider is connected, so parts run on this chat's provider."
	}
	return b + " Hand a part to another provider when the person asks or it plainly suits the part; otherwise keep your own. " +
		"The other connected providers:\n" + strings.Join(lines, "\n")
}

func category(c provider.Category) string {
	switch c {
	case provider.CodingAgent:
		return "a coding agent"
	case provider.LocalModel:
		return "a model on this computer"
	case provider.ChatOnly:
		return "a hosted model (it works through Conch's tools)"
	case provider.BuiltInShell:
		return "the built-in shell (it runs a part's instructions as one bash command, word for word)"
	}
	return "a provider"
}

// promptTTL is how long the providers listed in a prompt may be reused:
// asking a coding agent's CLI how it stands starts a process, which every
// turn need not wait for.
const promptTTL = 30 * time.Second

// recentEngines is engines, reused for promptTTL. delegate and
// start_background_task always ask afresh.
func (s *Service) recentEngines(ctx context.Context) []engine.Engine {
	s.mu.Lock()
	if s.listed != nil && time.Since(s.listedAt) < promptTTL {
		es := s.listed
		s.mu.Unlock()
		return es
	}
	s.mu.Unlock()
	es := s.cfg.Engines.All(ctx)
	s.mu.Lock()
	s.listed, s.listedAt = es, time.Now()
	s.mu.Unlock()
	return es
}
