package service

import (
	"fmt"
	"time"

	"conch/backend/errcode"
	"conch/backend/search"
)

// SearchQuery is GET /api/search's parameters: q's words ("a phrase" as
// written), and the filters that narrow it. From and To are RFC 3339
// times.
type SearchQuery struct {
	Q            string `json:"q"`
	Kind         string `json:"kind,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	Host         string `json:"host,omitempty"`
	Status       string `json:"status,omitempty"`
	From         string `json:"from,omitempty"`
	To           string `json:"to,omitempty"`
	Cursor       string `json:"cursor,omitempty"`
	Limit        int    `json:"limit,omitempty"`
}

// Search finds tasks, chats and output holding q's words, ranked, each
// with a snippet of where they matched.
func (s *Service) Search(q SearchQuery) (search.Results, error) {
	if s.cfg.Search == nil {
		return search.Results{}, errUnavailable("Search")
	}
	sq := search.Query{Q: q.Q, Kind: q.Kind, Conversation: q.Conversation, Host: q.Host, Status: q.Status,
		Cursor: q.Cursor, Limit: q.Limit}
	var err error
	if sq.From, err = when("from", q.From); err != nil {
		return search.Results{}, err
	}
	if sq.To, err = when("to", q.To); err != nil {
		return search.Results{}, err
	}
	return s.cfg.Search.Search(sq)
}

// when reads an RFC 3339 time ("" is none).
func when(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s must be an RFC 3339 time such as 2026-12-02T09:00:00Z", errcode.ErrInvalid, name)
	}
	return t, nil
}
