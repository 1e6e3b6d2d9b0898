package trace_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/trace"
)

// pushLanding is the n-th push to repo's default branch, of a commit no
// trace records: each is a delivery of its own (its body differs) that
// counts against the repository's rate limit and changes nothing.
func pushLanding(repo string, n int) []byte {
	return []byte(`{"ref":"refs/heads/main","after":"` + fmt.Sprintf("%040x", n) + `","repository":{"full_name":"` + repo + `","default_branch":"main"},"commits":[{"id":"` + fmt.Sprintf("%040x", n) + `"}]}`)
}

// TestWebhookRateLimitHoldsAcrossReplicas: two replicas on one Postgres
// share one limit of 100 deliveries a minute per repository. Sent 60 each
// at once, 100 are accepted and 20 refused (an in-memory limit per replica
// accepted all 120); another repository has its own limit.
func TestWebhookRateLimitHoldsAcrossReplicas(t *testing.T) {
	dsn := pgtest.Schema(t, "traces")
	_, svcA := pgService(t, dsn)
	_, svcB := pgService(t, dsn)
	var accepted, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 120)
	for i := range 120 {
		svc := []*trace.Service{svcA, svcB}[i%2]
		wg.Go(func() {
			_, err := svc.HandleGitHub(context.Background(), "push", fmt.Sprintf("d-%d", i), pushLanding("acme/gateway", i))
			switch {
			case err == nil:
				accepted.Add(1)
			case h4r.ErrorCode(err) == h4r.EEXHAUSTED:
				refused.Add(1)
			default:
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if accepted.Load() != trace.WebhookPerRepoPerMinute || refused.Load() != 20 {
		t.Fatalf("accepted %d, refused %d; want %d and 20 across both replicas", accepted.Load(), refused.Load(), trace.WebhookPerRepoPerMinute)
	}
	if _, err := svcB.HandleGitHub(context.Background(), "push", "other-repo", pushLanding("acme/billing", 0)); err != nil {
		t.Fatalf("another repository was refused: %v", err)
	}
}

// TestWebhookRateWindowReopens: the window holds 100 deliveries for one
// minute from its first; a minute later the repository may send again.
func TestWebhookRateWindowReopens(t *testing.T) {
	at := now
	h := newHarness(t)
	svc := trace.NewService(h.app.Store, trace.WithClock(func() time.Time { return at }), trace.WithLogger(quiet))
	send := func(i int) error {
		_, err := svc.HandleGitHub(context.Background(), "push", fmt.Sprintf("w-%d", i), pushLanding("acme/gateway", i))
		return err
	}
	for i := range trace.WebhookPerRepoPerMinute {
		if err := send(i); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	for _, step := range []struct {
		name    string
		advance time.Duration
		want    string // error code, "" for accepted
	}{
		{"101st in the window", 0, h4r.EEXHAUSTED},
		{"still the same window", 59 * time.Second, h4r.EEXHAUSTED},
		{"a minute after the window opened", time.Second, ""},
	} {
		at = at.Add(step.advance)
		if err := send(1000); h4r.ErrorCode(err) != step.want && !(step.want == "" && err == nil) {
			t.Errorf("%s: %v, want %q", step.name, err, step.want)
		}
	}
}
