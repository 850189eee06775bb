package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"conch/backend/service"
)

// The page writes folders under the person's home as ~/…; a browser
// cannot learn that folder, so the server says it.
func TestAboutSaysThePersonsHomeFolder(t *testing.T) {
	e := setup(t)
	resp, b := e.do(t, req{method: "GET", path: "/api/about"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/about: %d %s", resp.StatusCode, b)
	}
	var a service.About
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("not JSON: %q", b)
	}
	if a.UserHome != e.dir {
		t.Fatalf("userHome %q, want %q (%s)", a.UserHome, e.dir, b)
	}

	resp, b = e.do(t, req{method: "POST", path: "/api/about"})
	wantError(t, resp, b, http.StatusMethodNotAllowed, "method_not_allowed")
	resp, b = e.do(t, req{method: "GET", path: "/api/about", noToken: true})
	wantError(t, resp, b, http.StatusUnauthorized, "unauthorized")
}
