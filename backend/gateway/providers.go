package gateway

import (
	"context"
	"net/http"
	"strings"

	"conch/backend/provider/registry"
)

// Providers lists, connects and removes providers; *registry.Registry
// implements it.
type Providers interface {
	List(ctx context.Context) []registry.Listing
	Get(ctx context.Context, id string) (registry.Listing, error)
	Put(ctx context.Context, id string, req registry.PutRequest) (registry.Listing, error)
	Delete(id string) error
}

// ProviderList is the answer of GET /api/providers.
type ProviderList struct {
	Providers []registry.Listing `json:"providers"`
}

// providers lists every provider (GET /api/providers).
func (g *Gateway) providers(w http.ResponseWriter, r *http.Request) {
	if g.cfg.Providers == nil {
		writeError(w, http.StatusNotFound, "not_found", "Providers are not available here.")
		return
	}
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	writeJSON(w, http.StatusOK, ProviderList{Providers: g.cfg.Providers.List(r.Context())})
}

// providerByID serves /api/providers/:id: GET describes one, PUT connects
// or changes it, DELETE removes it.
func (g *Gateway) providerByID(w http.ResponseWriter, r *http.Request) {
	if g.cfg.Providers == nil {
		writeError(w, http.StatusNotFound, "not_found", "Providers are not available here.")
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/api/providers/")
	if id == "" || strings.Contains(id, "/") {
		writeError(w, http.StatusNotFound, "not_found", "No such API route: "+r.URL.Path)
		return
	}
	switch r.Method {
	case http.MethodGet:
		l, err := g.cfg.Providers.Get(r.Context(), id)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, l)
	case http.MethodPut:
		var req registry.PutRequest
		if !decode(w, r, &req) {
			return
		}
		l, err := g.cfg.Providers.Put(r.Context(), id, req)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, l)
	case http.MethodDelete:
		if !emptyBody(w, r) {
			return
		}
		if err := g.cfg.Providers.Delete(id); err != nil {
			writeErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "GET, PUT, DELETE")
	}
}
