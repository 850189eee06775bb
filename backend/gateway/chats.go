package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"conch/backend/chat"
	"conch/backend/errcode"
	"conch/backend/service"
)

// conversations lists the person's chats (GET) and starts one (POST).
func (g *Gateway) conversations(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		q, msg := conversationQuery(r)
		if msg != "" {
			writeError(w, errcode.Invalid, msg)
			return
		}
		l, err := g.api.ListConversations(q)
		reply(w, http.StatusOK, l, err)
	case http.MethodPost:
		var req chat.CreateRequest
		if !decode(w, r, &req) {
			return
		}
		c, err := g.api.CreateConversation(req)
		reply(w, http.StatusCreated, c, err)
	default:
		methodNotAllowed(w, "GET, POST")
	}
}

// conversationQuery reads GET /api/conversations's parameters (q, cursor,
// limit); msg says what is wrong with them.
func conversationQuery(r *http.Request) (q service.ConversationQuery, msg string) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return q, "The query string is not well formed (escape % as %25)."
	}
	for name := range v {
		switch name {
		case "q", "cursor", "limit":
		default:
			return q, fmt.Sprintf("Unknown parameter %q: the chat list takes q, cursor and limit.", name)
		}
	}
	q.Query, q.Cursor = v.Get("q"), v.Get("cursor")
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > chat.ListMax {
			return q, fmt.Sprintf("limit must be a whole number from 1 to %d.", chat.ListMax)
		}
		q.Limit = n
	}
	return q, ""
}

// conversationByID serves /api/conversations/:id and its actions:
// messages, stop, asks/:askId.
func (g *Gateway) conversationByID(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/conversations/")
	parts := strings.Split(rest, "/")
	id := parts[0]
	notFound := func() { writeError(w, errcode.NotFound, "No such API route: "+r.URL.Path) }
	if id == "" {
		notFound()
		return
	}
	switch {
	case len(parts) == 1:
		switch r.Method {
		case http.MethodGet:
			g.getConversation(w, r, id)
		case http.MethodPatch:
			g.patchConversation(w, r, id)
		default:
			methodNotAllowed(w, "GET, PATCH")
		}
	case len(parts) == 2 && parts[1] == "messages":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		g.sendMessage(w, r, id)
	case len(parts) == 2 && parts[1] == "stop":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		if !emptyBody(w, r) {
			return
		}
		c, err := g.api.StopConversation(id)
		reply(w, http.StatusOK, c, err)
	case len(parts) == 3 && parts[1] == "asks" && parts[2] != "":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		g.answerAsk(w, r, id, parts[2])
	default:
		notFound()
	}
}

func (g *Gateway) getConversation(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	before, err := strconv.ParseUint(q.Get("before"), 10, 64)
	if q.Get("before") == "" {
		before, err = 0, nil
	}
	if err != nil {
		writeError(w, errcode.Invalid, "before must be a message's seq (a whole number, 1 or more).")
		return
	}
	limit, err := intParam(q.Get("limit"), 0)
	if err != nil || limit < 0 || (q.Get("limit") != "" && limit == 0) || limit > 500 {
		writeError(w, errcode.Invalid, "limit must be a whole number from 1 to 500.")
		return
	}
	p, err := g.api.GetConversation(id, before, int(limit))
	reply(w, http.StatusOK, p, err)
}

func (g *Gateway) patchConversation(w http.ResponseWriter, r *http.Request, id string) {
	var req chat.PatchRequest
	if !decode(w, r, &req) {
		return
	}
	c, err := g.api.PatchConversation(id, req)
	reply(w, http.StatusOK, c, err)
}

// SendRequest is the body of POST /api/conversations/:id/messages.
type SendRequest struct {
	Text string `json:"text"`
}

func (g *Gateway) sendMessage(w http.ResponseWriter, r *http.Request, id string) {
	var req SendRequest
	if !decode(w, r, &req) {
		return
	}
	m, err := g.api.SendMessage(id, req.Text)
	reply(w, http.StatusAccepted, m, err)
}

// AskAnswer is the body of POST /api/conversations/:id/asks/:askId.
type AskAnswer struct {
	Allow *bool `json:"allow"`
}

func (g *Gateway) answerAsk(w http.ResponseWriter, r *http.Request, id, askID string) {
	var req AskAnswer
	if !decode(w, r, &req) {
		return
	}
	if req.Allow == nil {
		writeError(w, errcode.Invalid, "Send {\"allow\": true|false}.")
		return
	}
	c, err := g.api.AnswerAsk(id, askID, *req.Allow)
	reply(w, http.StatusOK, c, err)
}
