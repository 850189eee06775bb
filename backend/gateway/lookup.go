package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"conch/backend/errcode"
	"conch/backend/service"
)

// search serves GET /api/search?q=&kind=&conversation=&host=&status=&from=&to=&cursor=&limit=.
func (g *Gateway) search(w http.ResponseWriter, r *http.Request) {
	q := service.SearchQuery{}
	if !readQuery(w, r, map[string]*string{"q": &q.Q, "kind": &q.Kind, "conversation": &q.Conversation, "host": &q.Host,
		"status": &q.Status, "from": &q.From, "to": &q.To, "cursor": &q.Cursor}, &q.Limit) {
		return
	}
	res, err := g.api.Search(q)
	reply(w, http.StatusOK, res, err)
}

// activity serves GET /api/activity?outcome=&provider=&host=&chat=&kind=&cursor=&limit=.
func (g *Gateway) activity(w http.ResponseWriter, r *http.Request) {
	q := service.ActivityQuery{}
	if !readQuery(w, r, map[string]*string{"outcome": &q.Outcome, "provider": &q.Provider, "host": &q.Host, "chat": &q.Chat,
		"kind": &q.Kind, "cursor": &q.Cursor}, &q.Limit) {
		return
	}
	p, err := g.api.Activity(q)
	reply(w, http.StatusOK, p, err)
}

// readQuery reads a GET's parameters into fields, each given at most once,
// and limit (a whole number); anything else is answered 400 saying what,
// and false returned. The service checks what the values mean.
func readQuery(w http.ResponseWriter, r *http.Request, fields map[string]*string, limit *int) bool {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return false
	}
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, errcode.Invalid, "The query string is not well formed (escape % as %25).")
		return false
	}
	for name, vals := range v {
		if len(vals) != 1 {
			writeError(w, errcode.Invalid, fmt.Sprintf("Give %s once.", name))
			return false
		}
		if p, ok := fields[name]; ok {
			*p = vals[0]
			continue
		}
		if name != "limit" {
			names := []string{"limit"}
			for n := range fields {
				names = append(names, n)
			}
			sort.Strings(names)
			writeError(w, errcode.Invalid, fmt.Sprintf("Unknown parameter %q (%s).", name, strings.Join(names, ", ")))
			return false
		}
		n, err := strconv.Atoi(vals[0])
		if err != nil {
			writeError(w, errcode.Invalid, "limit must be a whole number.")
			return false
		}
		*limit = n
	}
	return true
}
