package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"conch/backend/task"
)

// POST /api/tasks/:id/open (`conch open ID`) shows the task as a click on
// its notification does: every page open on Conch hears app.open with its
// id. An unknown task is 404, a body 400, another method 405.
func TestOpenTaskTellsThePagesToShowIt(t *testing.T) {
	e := setup(t)
	tk := e.create(t, `{"text":"true","options":{"mode":"auto","cwd":"`+e.dir+`"}}`)
	e.waitStatus(t, tk.ID, task.Done)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	port := strings.TrimPrefix(e.base, "http://127.0.0.1:")
	conn, _, err := websocket.Dial(ctx, wsURL(e), &websocket.DialOptions{HTTPHeader: http.Header{
		"Authorization": {"Bearer " + token}, "Origin": {"http://127.0.0.1:" + port},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if resp, b := e.do(t, req{method: "POST", path: "/api/tasks/" + tk.ID + "/open"}); resp.StatusCode != 204 {
		t.Fatalf("open: %d %s", resp.StatusCode, b)
	}
	_, b, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"app.open","id":"` + tk.ID + `"}`; string(b) != want {
		t.Fatalf("the page heard %s, want %s", b, want)
	}
	resp, b := e.do(t, req{method: "POST", path: "/api/tasks/nope/open"})
	wantError(t, resp, b, 404, "not_found")
	if resp, _ := e.do(t, req{method: "POST", path: "/api/tasks/" + tk.ID + "/open", body: `{"x":1}`}); resp.StatusCode != 400 {
		t.Errorf("a body: %d", resp.StatusCode)
	}
	if resp, _ := e.do(t, req{method: "GET", path: "/api/tasks/" + tk.ID + "/open"}); resp.StatusCode != 405 {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}
