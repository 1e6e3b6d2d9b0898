package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/h4r/h4r"
)

// Outcome is what GitHub said of a commit.
type Outcome struct {
	Status     TraceStatus
	LandedAt   *time.Time
	MergedVia  *string
	RevertedBy *string
}

// LandedEvent is published on the landed subject after an outcome is
// applied (the document's buckley.event.landed).
type LandedEvent struct {
	TraceID    string      `json:"trace_id"`
	Repo       string      `json:"repo"`
	SHA        string      `json:"sha"`
	Status     TraceStatus `json:"status"`
	LandedAt   *time.Time  `json:"landed_at,omitempty"`
	MergedVia  *string     `json:"merged_via,omitempty"`
	RevertedBy *string     `json:"reverted_by,omitempty"`
}

// ApplyOutcome records an outcome on the trace of (repo, sha) and on its
// decisions (status and trust are theirs too). It reports whether the
// trace changed: false when there is no such trace or it already says
// so. Outcomes are idempotent, so a delivery applied twice (two replicas,
// a crash before the delivery was recorded) changes nothing the second
// time. A landed outcome never undoes a revert, and keeps the first
// landed_at.
func (s *Service) ApplyOutcome(ctx context.Context, repo, sha string, o Outcome) (changed bool, err error) {
	ctx, span := s.tracer.Start(ctx, "trace.outcome")
	defer func() { endSpan(span, err) }()
	id := ItemID(repo, sha)
	var applied *CommitTrace
	// Atomic against a re-ingest of the same trace: the outcome is written
	// only onto the version it was merged with (Service.atomically).
	err = s.atomically(ctx, id, func(t *CommitTrace) ([]h4r.Item, []string, error) {
		applied = nil
		if t == nil {
			return nil, nil, nil
		}
		if o.Status != StatusLanded && o.Status != StatusReverted {
			return nil, nil, fmt.Errorf("outcome of %s: unknown status %q", id, o.Status)
		}
		if !applyOutcome(t, o) {
			return nil, nil, nil
		}
		t.UpdatedAt = s.now().UTC()
		items, err := Items(t)
		if err != nil {
			return nil, nil, err
		}
		applied = t
		return items, nil, nil
	})
	if err == nil && applied == nil {
		// No trace of the commit yet (its trace may arrive after the
		// merge): the outcome waits for it.
		if found, ferr := s.traceExists(ctx, id); ferr != nil {
			return false, ferr
		} else if !found {
			return false, s.recordEarlyOutcome(ctx, repo, sha, o)
		}
	}
	if err != nil || applied == nil {
		return false, err
	}
	s.publishLanded(ctx, applied)
	return true, nil
}

// applyOutcome records o on t and reports whether t changed. A landed
// outcome never undoes a revert and keeps the first landed_at.
func applyOutcome(t *CommitTrace, o Outcome) bool {
	switch o.Status {
	case StatusLanded:
		if t.Status != StatusPending {
			return false
		}
		t.Status, t.LandedAt, t.MergedVia = StatusLanded, o.LandedAt, o.MergedVia
	case StatusReverted:
		if t.Status == StatusReverted && equalPtr(t.RevertedBy, o.RevertedBy) {
			return false
		}
		t.Status, t.RevertedBy = StatusReverted, o.RevertedBy
		if t.LandedAt == nil {
			t.LandedAt = o.LandedAt
		}
		if t.MergedVia == nil {
			t.MergedVia = o.MergedVia
		}
	default:
		return false
	}
	return true
}

func (s *Service) traceExists(ctx context.Context, id string) (bool, error) {
	_, err := s.store.Get(ctx, id)
	switch {
	case h4r.ErrorCode(err) == h4r.ENOTFOUND:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading trace %s: %w", id, err)
	}
	return true, nil
}

func equalPtr(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// publishLanded announces an applied outcome. It is best effort: the
// outcome is stored, and a subscriber that missed the event reads the
// trace.
func (s *Service) publishLanded(ctx context.Context, t *CommitTrace) {
	if s.publisher == nil {
		return
	}
	data, err := json.Marshal(LandedEvent{TraceID: t.ID, Repo: t.Repo, SHA: t.SHA, Status: t.Status, LandedAt: t.LandedAt, MergedVia: t.MergedVia, RevertedBy: t.RevertedBy})
	if err == nil {
		err = s.publisher.Publish(s.landedSubject, data)
	}
	if err != nil {
		s.log.WarnContext(ctx, "publishing the outcome event failed", "subject", s.landedSubject, "repo", t.Repo, "sha", t.SHA, "error", err)
	}
}
