package modelserver

import (
	"sync"
	"testing"
)

func TestTheLogKeepsWhatCameInOrderAndLetsARecordBeChanged(t *testing.T) {
	type req struct {
		path   string
		status int
	}
	var l Log[req]
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				change := l.KeepRequest(req{path: "/v1/x"})
				l.KeepTurn(Turn{Model: "m"})
				change(func(r *req) { r.status = 200 })
			}
		})
	}
	wg.Wait()
	rs, ts := l.Requests(), l.Turns()
	if len(rs) != 400 || len(ts) != 400 {
		t.Fatalf("%d requests and %d turns, want 400 of each", len(rs), len(ts))
	}
	for i, r := range rs {
		if r.status != 200 {
			t.Fatalf("request %d kept status %d", i, r.status)
		}
	}
	rs[0].status = 500 // a copy: the log's own record stays
	if l.Requests()[0].status != 200 {
		t.Fatal("Requests gave the log's own slice")
	}
}
