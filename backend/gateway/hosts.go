package gateway

import (
	"net/http"
	"strings"

	"conch/backend/errcode"
	"conch/backend/host"
)

// hostList lists the hosts (GET).
func (g *Gateway) hostList(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	l, err := g.api.ListHosts()
	reply(w, http.StatusOK, l, err)
}

// hostByID serves /api/hosts/:id (GET, PUT, DELETE), and POST
// /api/hosts/:id/test and /api/hosts/:id/accept-key.
func (g *Gateway) hostByID(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/hosts/")
	id, action, _ := strings.Cut(rest, "/")
	switch {
	case id == "" || strings.Contains(action, "/") || (action != "" && action != "test" && action != "accept-key"):
		writeError(w, errcode.NotFound, "No such API route: "+r.URL.Path)
	case action != "" && r.Method != http.MethodPost:
		methodNotAllowed(w, "POST")
	case action == "test":
		if !emptyBody(w, r) {
			return
		}
		res, err := g.api.TestHost(id)
		reply(w, http.StatusOK, res, err)
	case action == "accept-key":
		var req host.AcceptRequest
		if !decode(w, r, &req) {
			return
		}
		h, err := g.api.AcceptHostKey(id, req)
		reply(w, http.StatusOK, h, err)
	case r.Method == http.MethodGet:
		h, err := g.api.GetHost(id)
		reply(w, http.StatusOK, h, err)
	case r.Method == http.MethodPut:
		var req host.PutRequest
		if !decode(w, r, &req) {
			return
		}
		status := http.StatusOK
		if req.Rev == nil {
			status = http.StatusCreated
		}
		h, err := g.api.PutHost(id, req)
		reply(w, status, h, err)
	case r.Method == http.MethodDelete:
		if !emptyBody(w, r) {
			return
		}
		if err := g.api.DeleteHost(id); err != nil {
			writeErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "GET, PUT, DELETE")
	}
}
