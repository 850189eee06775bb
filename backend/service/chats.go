package service

import (
	"fmt"
	"strings"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/taskrun"
)

// ConversationList is a page of the person's chats (GET
// /api/conversations), the most recently changed first; Next is the
// cursor of the page after it ("" at the end).
type ConversationList struct {
	Conversations []conversation.Conversation `json:"conversations" ts:"notnull"`
	Next          string                      `json:"next"`
}

// ConversationQuery asks for a page of the person's chats: those whose
// titles hold every word of Query, Limit of them (chat.ListDefault when 0,
// at most chat.ListMax) after Cursor (the Next of the page before).
type ConversationQuery struct {
	Query  string `json:"q,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

func (s *Service) chats() (*chat.Manager, error) {
	if s.cfg.Chats == nil {
		return nil, errUnavailable("Chats")
	}
	return s.cfg.Chats, nil
}

// ListConversations returns a page of the person's chats (task chats
// excluded), the most recently changed first.
func (s *Service) ListConversations(q ConversationQuery) (ConversationList, error) {
	m, err := s.chats()
	if err != nil {
		return ConversationList{}, err
	}
	if len(q.Query) > maxQuery {
		return ConversationList{}, fmt.Errorf("%w: the search is longer than %d characters", chat.ErrInvalid, maxQuery)
	}
	l, err := m.List(q.Query, q.Cursor, q.Limit)
	if err != nil {
		return ConversationList{}, err
	}
	return ConversationList{Conversations: l.Conversations, Next: l.Next}, nil
}

// CreateConversation starts a chat.
func (s *Service) CreateConversation(req chat.CreateRequest) (conversation.Conversation, error) {
	m, err := s.chats()
	if err != nil {
		return conversation.Conversation{}, err
	}
	if req.Host != "" {
		if req.Provider, err = s.hostAgent(req.Host, req.Provider); err != nil {
			return conversation.Conversation{}, err
		}
	}
	return m.Create(req)
}

// hostAgent is the coding-agent CLI a chat on host works on: the one
// named, found there at its last test; with none named, the only one
// there.
func (s *Service) hostAgent(host, named string) (string, error) {
	if s.cfg.Links == nil {
		return "", fmt.Errorf("%w: this Conch does not reach other computers", taskrun.ErrInvalid)
	}
	if err := s.cfg.Links.Check(host); err != nil {
		return "", err
	}
	agents, err := s.cfg.Links.Agents(host)
	if err != nil {
		return "", err
	}
	var there []string
	for _, a := range agents {
		if named == a.ID || named == "" && len(agents) == 1 {
			return a.ID, nil
		}
		there = append(there, fmt.Sprintf("%s (%s)", a.ID, a.Name()))
	}
	if len(there) == 0 {
		return "", fmt.Errorf("%w: a chat on %s works on a coding-agent CLI installed there, and its last test found none (Settings → Hosts → Test)", taskrun.ErrInvalid, host)
	}
	return "", fmt.Errorf("%w: a chat on %s works on a coding-agent CLI installed there; name one of %s", taskrun.ErrInvalid, host, strings.Join(there, ", "))
}

// GetConversation returns a chat with up to limit messages before seq
// before (0, 0: the newest 100).
func (s *Service) GetConversation(id string, before uint64, limit int) (chat.Page, error) {
	m, err := s.chats()
	if err != nil {
		return chat.Page{}, err
	}
	return m.Get(id, before, limit)
}

// PatchConversation changes a chat's title, mode, provider, model or
// limit, or clears its taint.
func (s *Service) PatchConversation(id string, req chat.PatchRequest) (conversation.Conversation, error) {
	m, err := s.chats()
	if err != nil {
		return conversation.Conversation{}, err
	}
	return m.Patch(id, req)
}

// SendMessage stores the person's message; the reply streams in as events.
func (s *Service) SendMessage(id, text string) (conversation.Message, error) {
	m, err := s.chats()
	if err != nil {
		return conversation.Message{}, err
	}
	return m.Send(id, text)
}

// StopConversation stops a chat's running reply and any tool it runs.
func (s *Service) StopConversation(id string) (conversation.Conversation, error) {
	m, err := s.chats()
	if err != nil {
		return conversation.Conversation{}, err
	}
	return m.StopTurn(id)
}

// AnswerAsk allows or denies a chat's pending question.
func (s *Service) AnswerAsk(id, askID string, allow bool) (conversation.Conversation, error) {
	m, err := s.chats()
	if err != nil {
		return conversation.Conversation{}, err
	}
	return m.Answer(id, askID, allow)
}
