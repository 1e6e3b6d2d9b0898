package trace_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/trace"
)

// countDeliveries counts the delivery records in the store.
func countDeliveries(t *testing.T, h *harness) int {
	t.Helper()
	n := 0
	err := h.app.Store.Each(context.Background(), func(it *h4r.Item) error {
		if it.Kind == trace.KindDelivery {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWebhookReplayUnderFreshIDs: one signed body sent 110 times, each
// under a fresh X-GitHub-Delivery (which the signature does not cover), is
// one delivery: applied once, the rest answered processed with nothing
// updated, none of them counted against the repository's limit nor
// recorded again; a genuine delivery after them is applied. Keyed on the
// header, the replays filled the window and the genuine one was refused.
func TestWebhookReplayUnderFreshIDs(t *testing.T) {
	h := newHarness(t)
	captured := pushLanding("acme/gateway", 1)
	for i := range 110 {
		res, err := h.svc.HandleGitHub(context.Background(), "push", fmt.Sprintf("replay-%d", i), captured)
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if !res.Processed || res.TracesUpdated != 0 {
			t.Fatalf("replay %d: %+v, want processed with nothing updated", i, res)
		}
	}
	if _, err := h.svc.HandleGitHub(context.Background(), "push", "genuine", pushLanding("acme/gateway", 2)); err != nil {
		t.Fatalf("a genuine delivery after the replays: %v", err)
	}
	if n := countDeliveries(t, h); n != 2 {
		t.Errorf("%d delivery records, want 2 (one a body)", n)
	}
}

// TestWebhookRefusalSaysWhenToRetry: a delivery over the repository's
// window is refused with the time left until the window reopens.
func TestWebhookRefusalSaysWhenToRetry(t *testing.T) {
	at := now
	h := newHarness(t)
	svc := trace.NewService(h.app.Store, trace.WithClock(func() time.Time { return at }), trace.WithLogger(quiet))
	for i := range trace.WebhookPerRepoPerMinute {
		if _, err := svc.HandleGitHub(context.Background(), "push", fmt.Sprintf("w-%d", i), pushLanding("acme/gateway", i)); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	at = at.Add(20 * time.Second)
	_, err := svc.HandleGitHub(context.Background(), "push", "late", pushLanding("acme/gateway", 1000))
	var rl *trace.RateLimitError
	if !errors.As(err, &rl) || h4r.ErrorCode(err) != h4r.EEXHAUSTED {
		t.Fatalf("over the window: %v, want a resource_exhausted RateLimitError", err)
	}
	if rl.RetryAfter() != 40*time.Second {
		t.Errorf("retry after %v, want 40s (the window opened 20 s ago)", rl.RetryAfter())
	}
}

// TestDeliveryRecordsExpire: a delivery's record keeps its body from
// being applied again for the TTL; past it the body is applied again, and
// pruning deletes the records past it, so that they do not pile up.
func TestDeliveryRecordsExpire(t *testing.T) {
	at := now
	h := newHarness(t)
	svc := trace.NewService(h.app.Store, trace.WithClock(func() time.Time { return at }), trace.WithLogger(quiet),
		trace.WithDeliveryTTL(time.Hour))
	send := func(delivery string, n int) *trace.WebhookResult {
		t.Helper()
		res, err := svc.HandleGitHub(context.Background(), "push", delivery, pushLanding("acme/gateway", n))
		if err != nil {
			t.Fatalf("%s: %v", delivery, err)
		}
		return res
	}
	send("first", 1)
	at = at.Add(30 * time.Minute)
	send("second", 2)
	if got := countDeliveries(t, h); got != 2 {
		t.Fatalf("%d records, want 2", got)
	}
	// The first is 75 minutes old, the second 45; the last prune ran an
	// hour and a quarter ago, at the first delivery, so this one prunes.
	at = at.Add(45 * time.Minute)
	send("third", 3)
	if got := countDeliveries(t, h); got != 2 {
		t.Errorf("%d records after the prune, want 2 (the second and the third)", got)
	}
	if _, err := h.app.Store.Get(context.Background(), trace.DeliveryItemID(pushLanding("acme/gateway", 1))); h4r.ErrorCode(err) != h4r.ENOTFOUND {
		t.Errorf("the expired record is still there: %v", err)
	}
	at = at.Add(2 * time.Hour) // every record expired; PruneDeliveries on demand
	if pruned, err := svc.PruneDeliveries(context.Background()); err != nil || pruned != 2 {
		t.Errorf("PruneDeliveries = %d, %v; want 2", pruned, err)
	}
}
