package trace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/h4r/h4r"
)

const (
	// DefaultDeliveryTTL is how long a delivery's record keeps the same
	// body from being applied (and counted) again: GitHub redelivers
	// deliveries of the past three days. A body sent again later is
	// applied again, which changes nothing (ApplyOutcome is idempotent),
	// and counts once more against its repository's limit.
	DefaultDeliveryTTL = 72 * time.Hour
	// deliveryPruneEvery is how often expired records are deleted, so
	// that they number at most what the rate limit lets in within a TTL
	// and a prune interval.
	deliveryPruneEvery = time.Hour
	deliveryIDPrefix   = "github-delivery:"
)

// WithDeliveryTTL sets how long a webhook delivery's record is kept
// (default DefaultDeliveryTTL).
func WithDeliveryTTL(d time.Duration) ServiceOption {
	return func(v *Service) { v.deliveryTTL = d }
}

// DeliveryItemID is the id of the record of a delivery: the SHA-256 of
// its body, which the signature covers (a delivery's X-GitHub-Delivery
// header is not signed, so anyone replaying a body can change it).
func DeliveryItemID(body []byte) string {
	sum := sha256.Sum256(body)
	return deliveryIDPrefix + hex.EncodeToString(sum[:])
}

// deliveryApplied reports whether the record id holds a delivery applied
// within the TTL; an older record is as good as none (pruning may not
// have reached it yet).
func (s *Service) deliveryApplied(ctx context.Context, id string) (bool, error) {
	it, err := s.store.Get(ctx, id)
	switch {
	case h4r.ErrorCode(err) == h4r.ENOTFOUND:
		return false, nil
	case err != nil:
		return false, err
	}
	return s.now().Sub(it.Metadata.CreatedAt) < s.deliveryTTL, nil
}

// pruneEvery deletes expired delivery records when the last prune is
// deliveryPruneEvery old; a failure is logged, as the delivery it follows
// was applied.
func (s *Service) pruneEvery(ctx context.Context) {
	s.pruneMu.Lock()
	due := s.now().Sub(s.lastPrune) >= deliveryPruneEvery
	if due {
		s.lastPrune = s.now()
	}
	s.pruneMu.Unlock()
	if !due {
		return
	}
	if n, err := s.PruneDeliveries(ctx); err != nil {
		s.log.WarnContext(ctx, "pruning expired webhook delivery records", "error", err)
	} else if n > 0 {
		s.log.InfoContext(ctx, "pruned expired webhook delivery records", "deleted", n)
	}
}

// PruneDeliveries deletes the delivery records older than the TTL, and
// the outcomes that waited for a trace longer than theirs, and returns
// how many it deleted.
func (s *Service) PruneDeliveries(ctx context.Context) (int, error) {
	n, err := s.pruneKind(ctx, KindDelivery, s.now().Add(-s.deliveryTTL))
	if err != nil {
		return n, err
	}
	m, err := s.pruneKind(ctx, KindEarlyOutcome, s.now().Add(-s.outcomeTTL))
	return n + m, err
}

// pruneKind deletes the items of kind created before cutoff, found by the
// store's index rather than a scan.
func (s *Service) pruneKind(ctx context.Context, kind string, cutoff time.Time) (int, error) {
	deleted := 0
	for {
		expired, err := s.store.Find(ctx, h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{kind}, CreatedBefore: cutoff}, Limit: h4r.MaxFindLimit})
		if err != nil {
			return deleted, fmt.Errorf("finding expired %s records: %w", kind, err)
		}
		for _, it := range expired {
			if err := s.store.Delete(ctx, it.ID); err != nil && h4r.ErrorCode(err) != h4r.ENOTFOUND {
				return deleted, fmt.Errorf("deleting %s record %s: %w", kind, it.ID, err)
			}
			deleted++
		}
		if len(expired) < h4r.MaxFindLimit {
			return deleted, nil
		}
	}
}
