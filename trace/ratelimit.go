package trace

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/h4r/h4r"
)

// KindRateWindow holds one repository's webhook rate-limit window in the
// store. Like KindDelivery, its trust is 0 and it is restricted, so the
// default policy never delivers it.
const KindRateWindow = "github_rate_window"

// maxRateAttempts bounds the compare-and-swap retries of one delivery's
// count when deliveries of one repository arrive at once; each retry waits
// a random few milliseconds, so that the writers spread out.
const maxRateAttempts = 100

// allowDelivery counts a delivery against repo's limit of
// WebhookPerRepoPerMinute. The count is an item in the store every replica
// shares (Postgres for several replicas), updated by compare-and-swap on
// its version, so the limit holds across replicas, not per replica. It is
// a fixed window: it opens at a repository's first delivery and holds
// WebhookPerRepoPerMinute deliveries for one minute (so at most twice that
// in any 60 s straddling two windows). A refusal comes with the time until
// the window reopens.
func (s *Service) allowDelivery(ctx context.Context, repo string) (bool, time.Duration, error) {
	id := "github-rate:" + repo
	for attempt := 1; ; attempt++ {
		now := s.now().UTC()
		start, count, version := now, 0, 0
		it, err := s.store.Get(ctx, id)
		switch {
		case err == nil:
			version = it.Metadata.Version
			if t, n, ok := rateWindow(it); ok && !now.Before(t) && now.Sub(t) < time.Minute {
				start, count = t, n
			}
		case h4r.ErrorCode(err) != h4r.ENOTFOUND:
			return false, 0, fmt.Errorf("reading the webhook rate window of %s: %w", repo, err)
		}
		if count >= WebhookPerRepoPerMinute {
			return false, start.Add(time.Minute).Sub(now), nil
		}
		zero, one := 0.0, 1.0
		next := h4r.Item{
			ID: id, Kind: KindRateWindow,
			Text:    "GitHub webhook rate window for " + repo,
			Content: map[string]any{"repo": repo, "window_start": start.Format(time.RFC3339Nano), "count": count + 1},
			Metadata: h4r.Metadata{
				CreatedAt: now, Trust: &zero, Sensitivity: &one,
				RestrictedToGroups: []string{"h4r-webhook-deliveries"}, Source: "github",
			},
		}
		_, err = s.store.ReplaceIf(ctx, h4r.VersionCheck{ID: id, Version: version}, []h4r.Item{next}, nil)
		if err == nil {
			return true, 0, nil
		}
		if !errors.Is(err, h4r.ErrVersionConflict) {
			return false, 0, fmt.Errorf("counting a webhook delivery of %s: %w", repo, err)
		}
		if attempt == maxRateAttempts {
			return false, 0, h4r.Errorf(h4r.EUNAVAILABLE, "", "the webhook rate window of %s is contended; retry", repo)
		}
		select {
		case <-ctx.Done():
			return false, 0, ctx.Err()
		case <-time.After(time.Duration(1+rand.IntN(min(attempt, 10)*2)) * time.Millisecond):
		}
	}
}

// rateWindow reads a rate window item's start and count.
func rateWindow(it *h4r.Item) (time.Time, int, bool) {
	s, _ := it.Content["window_start"].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, 0, false
	}
	switch n := it.Content["count"].(type) {
	case float64:
		return t, int(n), true
	case int:
		return t, n, true
	}
	return time.Time{}, 0, false
}
