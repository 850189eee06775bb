package agentcli

import (
	"testing"
	"time"
)

// A ready answer is kept for readyTTL, any other for notReadyTTL, and one
// that could not tell is not kept at all.
func TestReadyCacheKeepsReadyLongerThanNotReady(t *testing.T) {
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	probes := 0
	answer, tells := readiness{ready: true}, true
	c := readyCache{now: func() time.Time { return now }}
	get := func() readiness {
		got, _ := c.get(func() (readiness, bool) { probes++; return answer, tells })
		return got
	}
	step := func(d time.Duration, wantProbes int, wantReady bool) {
		t.Helper()
		now = now.Add(d)
		if got := get(); probes != wantProbes || got.ready != wantReady {
			t.Fatalf("after %s: %d probes, ready %v; want %d, %v", d, probes, got.ready, wantProbes, wantReady)
		}
	}
	step(0, 1, true)
	answer = readiness{reason: "logged out"}
	step(readyTTL-time.Second, 1, true) // still the kept "ready"
	step(time.Second, 2, false)         // kept long enough: asked again
	answer = readiness{ready: true}
	step(notReadyTTL-time.Second, 2, false)
	step(time.Second, 3, true) // a login shows within notReadyTTL
	answer, tells = readiness{}, false
	step(readyTTL, 4, false) // could not tell: not kept, so asked again next time
	answer, tells = readiness{ready: true}, true
	step(0, 5, true)
}
