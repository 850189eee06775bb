package service

import (
	"conch/backend/activity"
)

// ActivityQuery is GET /api/activity's parameters.
type ActivityQuery struct {
	Outcome  string `json:"outcome,omitempty"`
	Provider string `json:"provider,omitempty"`
	Host     string `json:"host,omitempty"`
	Chat     string `json:"chat,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Cursor   string `json:"cursor,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

// Activity is a page of everything that ran, day by day, newest first.
func (s *Service) Activity(q ActivityQuery) (activity.Page, error) {
	if s.cfg.Activity == nil {
		return activity.Page{}, errUnavailable("Activity")
	}
	return s.cfg.Activity.Page(activity.Query{Outcome: q.Outcome, Provider: q.Provider, Host: q.Host, Chat: q.Chat,
		Kind: q.Kind, Cursor: q.Cursor, Limit: q.Limit})
}
