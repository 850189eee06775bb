package gateway

import (
	"net/http"
	"strings"

	"conch/backend/errcode"
	"conch/backend/routine"
)

// routines lists (GET) and makes (POST) routines.
func (g *Gateway) routines(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		l, err := g.api.ListRoutines()
		reply(w, http.StatusOK, l, err)
	case http.MethodPost:
		var req routine.CreateRequest
		if !decode(w, r, &req) {
			return
		}
		c, err := g.api.CreateRoutine(req)
		reply(w, http.StatusCreated, c, err)
	default:
		methodNotAllowed(w, "GET, POST")
	}
}

// routineByID serves /api/routines/:id (GET, PATCH, DELETE) and
// POST /api/routines/:id/run.
func (g *Gateway) routineByID(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/routines/")
	id, action, _ := strings.Cut(rest, "/")
	switch {
	case id == "" || strings.Contains(action, "/") || (action != "" && action != "run"):
		writeError(w, errcode.NotFound, "No such API route: "+r.URL.Path)
	case action == "run":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		if !emptyBody(w, r) {
			return
		}
		t, err := g.api.RunRoutine(id)
		reply(w, http.StatusCreated, t, err)
	case r.Method == http.MethodGet:
		c, err := g.api.GetRoutine(id)
		reply(w, http.StatusOK, c, err)
	case r.Method == http.MethodPatch:
		var req routine.PatchRequest
		if !decode(w, r, &req) {
			return
		}
		c, err := g.api.PatchRoutine(id, req)
		reply(w, http.StatusOK, c, err)
	case r.Method == http.MethodDelete:
		if !emptyBody(w, r) {
			return
		}
		if err := g.api.DeleteRoutine(id); err != nil {
			writeErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "GET, PATCH, DELETE")
	}
}
