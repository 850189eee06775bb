package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"conch/backend/activity"
	"conch/backend/search"
)

// A finished command is found by a word of its output and shows in
// Activity; bad parameters are a 400 that says why, never a 5xx.
func TestSearchAndActivityAnswerOverHTTP(t *testing.T) {
	e := setup(t)
	resp, b := e.do(t, req{method: "POST", path: "/api/tasks", body: `{"text":"echo narwhal-$((6*7))","options":{"mode":"auto"}}`})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, b = e.do(t, req{method: "GET", path: "/api/search?q=narwhal-42&kind=output"})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("search: %d %s", resp.StatusCode, b)
		}
		var res search.Results
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not found: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, b = e.do(t, req{method: "GET", path: "/api/activity?limit=10"})
	var p activity.Page
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &p) != nil || len(p.Days) != 1 || len(p.Days[0].Rows) != 1 || p.Days[0].Rows[0].Outcome != "done" {
		t.Fatalf("activity: %d %s", resp.StatusCode, b)
	}
	for _, path := range []string{
		"/api/search", "/api/search?q=", "/api/search?q=a&kind=nope", "/api/search?q=a&q=b", "/api/search?q=a&colour=red",
		"/api/search?q=a&from=yesterday", "/api/search?q=a&limit=x", "/api/search?q=" + url.QueryEscape(`"`),
		"/api/activity?outcome=great", "/api/activity?limit=x", "/api/activity?cursor=zz", "/api/activity?colour=red",
	} {
		resp, b := e.do(t, req{method: "GET", path: path})
		wantError(t, resp, b, http.StatusBadRequest, "invalid")
	}
	resp, b = e.do(t, req{method: "POST", path: "/api/search?q=a"})
	wantError(t, resp, b, http.StatusMethodNotAllowed, "method_not_allowed")
}
