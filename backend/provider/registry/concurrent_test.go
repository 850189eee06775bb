package registry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"conch/backend/provider/registry"
)

// TestConcurrentUse has PUTs, DELETEs and reads race each other (run with
// -race); every provider left afterwards is complete.
func TestConcurrentUse(t *testing.T) {
	b := setup(t)
	r := open(t, b.cfg)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("p%d", i%4)
			k := fmt.Sprintf("sk-concurrent-%04d", i)
			for range 5 {
				if _, err := r.Put(context.Background(), id, registry.PutRequest{Kind: "anthropic", APIKey: &k}); err != nil {
					t.Error(err)
					return
				}
				for _, got := range r.IDs() {
					if p, ok := r.Provider(got); ok && p == nil {
						t.Errorf("Provider(%s) is nil", got)
					}
				}
				_ = r.List(context.Background())
				_ = r.Delete(id) // may lose the race to another goroutine's delete
			}
		}()
	}
	wg.Wait()
	for _, l := range r.List(context.Background()) {
		if l.ID == "shell" {
			continue // built in, always listed
		}
		if l.Kind != "anthropic" || !l.KeySet {
			t.Errorf("left behind: %+v", l)
		}
	}
}

// TestListDoesNotWaitForASlowProvider: probes run in parallel, each for at
// most InfoTimeout, so servers that never answer cost the list no more.
func TestListDoesNotWaitForASlowProvider(t *testing.T) {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)
	b := setup(t)
	b.cfg.InfoTimeout = 300 * time.Millisecond
	r := open(t, b.cfg)
	for _, id := range []string{"slow1", "slow2", "slow3"} {
		if _, err := r.Put(context.Background(), id, registry.PutRequest{Kind: "openai", BaseURL: slow.URL + "/v1", Model: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	ls := r.List(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("List took %s with three hanging servers", took)
	}
	ls = slices.DeleteFunc(ls, func(l registry.Listing) bool { return l.ID == "shell" })
	if len(ls) != 3 {
		t.Fatalf("List = %+v", ls)
	}
	for _, l := range ls {
		if l.Ready || l.Reason == "" || l.Models.Default != "m" {
			t.Errorf("%s = %+v, want not ready with a reason and the configured model", l.ID, l)
		}
	}
}
