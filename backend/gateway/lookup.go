package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"conch/backend/errcode"
	"conch/backend/service"
)

// search serves GET /api/search?q=&kind=&conversation=&host=&status=&from=&to=&cursor=&limit=.
func (g *Gateway) search(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, errcode.Invalid, "The query string is not well formed (escape % as %25).")
		return
	}
	q := service.SearchQuery{}
	for name, vals := range v {
		if len(vals) != 1 {
			writeError(w, errcode.Invalid, fmt.Sprintf("Give %s once.", name))
			return
		}
		val := vals[0]
		switch name {
		case "q":
			q.Q = val
		case "kind":
			q.Kind = val
		case "conversation":
			q.Conversation = val
		case "host":
			q.Host = val
		case "status":
			q.Status = val
		case "from":
			q.From = val
		case "to":
			q.To = val
		case "cursor":
			q.Cursor = val
		case "limit":
			n, err := strconv.Atoi(val)
			if err != nil {
				writeError(w, errcode.Invalid, "limit must be a whole number.")
				return
			}
			q.Limit = n
		default:
			writeError(w, errcode.Invalid, fmt.Sprintf("Unknown parameter %q (q, kind, conversation, host, status, from, to, cursor, limit).", name))
			return
		}
	}
	res, err := g.api.Search(q)
	reply(w, http.StatusOK, res, err)
}

// activity serves GET /api/activity?outcome=&provider=&host=&chat=&kind=&cursor=&limit=.
func (g *Gateway) activity(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, errcode.Invalid, "The query string is not well formed (escape % as %25).")
		return
	}
	q := service.ActivityQuery{}
	fields := map[string]*string{"outcome": &q.Outcome, "provider": &q.Provider, "host": &q.Host, "chat": &q.Chat, "kind": &q.Kind, "cursor": &q.Cursor}
	for name, vals := range v {
		if len(vals) != 1 {
			writeError(w, errcode.Invalid, fmt.Sprintf("Give %s once.", name))
			return
		}
		if p, ok := fields[name]; ok {
			*p = vals[0]
			continue
		}
		if name != "limit" {
			writeError(w, errcode.Invalid, fmt.Sprintf("Unknown parameter %q (outcome, provider, host, chat, kind, cursor, limit).", name))
			return
		}
		n, err := strconv.Atoi(vals[0])
		if err != nil {
			writeError(w, errcode.Invalid, "limit must be a whole number.")
			return
		}
		q.Limit = n
	}
	p, err := g.api.Activity(q)
	reply(w, http.StatusOK, p, err)
}
