package server_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestConcurrentRequests runs context packs and ingests at once, 20
// goroutines on one stack; run under -race it also checks the handlers
// share no unsynchronised state.
func TestConcurrentRequests(t *testing.T) {
	const workers = 20
	s := newStack(t)
	base := s.serve(t)
	type outcome struct {
		what string
		r    response
		err  error
	}
	results := make([]outcome, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			if i%2 == 0 {
				r, err := send(http.MethodPost, base+"/v1/context-pack", []byte(healerBody), "X-Request-Id", fmt.Sprintf("conc-%d", i))
				results[i] = outcome{"context-pack", r, err}
				return
			}
			body := fmt.Sprintf(`{"items": [{"id": "conc-%d", "text": "login selector item %d"}, {"id": "conc-%d-b", "text": "second"}]}`, i, i, i)
			r, err := send(http.MethodPost, base+"/v1/items", []byte(body))
			results[i] = outcome{"items", r, err}
		})
	}
	wg.Wait()
	for i, o := range results {
		switch {
		case o.err != nil:
			t.Errorf("worker %d (%s): %v", i, o.what, o.err)
		case o.r.status != http.StatusOK:
			t.Errorf("worker %d (%s): status %d: %s", i, o.what, o.r.status, o.r.body)
		case o.what == "context-pack":
			p := decodePack(t, o.r)
			if want := fmt.Sprintf("conc-%d", i); p.RequestID != want || len(p.Results) == 0 {
				t.Errorf("worker %d: request_id %q with %d results, want %q with results", i, p.RequestID, len(p.Results), want)
			}
		default:
			if u := decodeUpserted(t, o.r); u.Upserted != 2 {
				t.Errorf("worker %d: upserted %d, want 2", i, u.Upserted)
			}
			for _, id := range []string{fmt.Sprintf("conc-%d", i), fmt.Sprintf("conc-%d-b", i)} {
				if _, ok := getItem(t, base, id); !ok {
					t.Errorf("%s is not in the store", id)
				}
			}
		}
	}
}
