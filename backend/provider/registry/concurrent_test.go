package registry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

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
		if l.Kind != "anthropic" || !l.KeySet {
			t.Errorf("left behind: %+v", l)
		}
	}
}
