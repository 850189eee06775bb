package gateway

import (
	"net/http"
	"strings"

	"conch/backend/errcode"
	"conch/backend/provider/registry"
)

// providers lists every provider (GET /api/providers).
func (g *Gateway) providers(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	l, err := g.api.ListProviders()
	reply(w, http.StatusOK, l, err)
}

// found looks again for the providers Conch finds on its own and says
// what it found (GET /api/found).
func (g *Gateway) found(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	f, err := g.api.FindProviders()
	reply(w, http.StatusOK, f, err)
}

// providerByID serves /api/providers/:id: GET describes one, PUT connects
// or changes it, DELETE removes it.
func (g *Gateway) providerByID(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/api/providers/")
	if id == "" || strings.Contains(id, "/") {
		writeError(w, errcode.NotFound, "No such API route: "+r.URL.Path)
		return
	}
	switch r.Method {
	case http.MethodGet:
		l, err := g.api.GetProvider(id)
		reply(w, http.StatusOK, l, err)
	case http.MethodPut:
		var req registry.PutRequest
		if !decode(w, r, &req) {
			return
		}
		l, err := g.api.PutProvider(id, req)
		reply(w, http.StatusOK, l, err)
	case http.MethodDelete:
		if !emptyBody(w, r) {
			return
		}
		if err := g.api.DeleteProvider(id); err != nil {
			writeErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "GET, PUT, DELETE")
	}
}
