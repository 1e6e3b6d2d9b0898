package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/h4r/h4r"
)

// KindEarlyOutcome records a GitHub outcome of a commit whose trace has
// not arrived yet; the trace takes it when it is ingested. Trust 0 and a
// group of its own keep the default policy from delivering it.
const KindEarlyOutcome = "trace_outcome"

// DefaultEarlyOutcomeTTL is how long an outcome waits for its trace:
// most commits pushed to a default branch were not made by an agent and
// never get one.
const DefaultEarlyOutcomeTTL = 14 * 24 * time.Hour

const earlyOutcomeGroup = "h4r-trace-outcomes"

// WithEarlyOutcomeTTL sets how long an outcome recorded before its trace
// is kept (default DefaultEarlyOutcomeTTL).
func WithEarlyOutcomeTTL(d time.Duration) ServiceOption {
	return func(v *Service) { v.outcomeTTL = d }
}

// EarlyOutcomeItemID is the id of the outcome of (repo, sha) recorded
// before its trace.
func EarlyOutcomeItemID(repo, sha string) string { return "trace-outcome:" + ItemID(repo, sha) }

type earlyRecord struct {
	Status     TraceStatus `json:"status"`
	LandedAt   *time.Time  `json:"landed_at,omitempty"`
	MergedVia  *string     `json:"merged_via,omitempty"`
	RevertedBy *string     `json:"reverted_by,omitempty"`
	Repo       string      `json:"repo"`
	SHA        string      `json:"sha"`
}

// earlyOutcome returns the outcome recorded for (repo, sha) before its
// trace, or nil.
func (s *Service) earlyOutcome(ctx context.Context, repo, sha string) (*Outcome, error) {
	it, err := s.store.Get(ctx, EarlyOutcomeItemID(repo, sha))
	switch {
	case h4r.ErrorCode(err) == h4r.ENOTFOUND:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the recorded outcome of %s: %w", ItemID(repo, sha), err)
	}
	if it.Kind != KindEarlyOutcome || s.now().Sub(it.Metadata.CreatedAt) > s.outcomeTTL {
		return nil, nil
	}
	b, err := json.Marshal(it.Content)
	if err != nil {
		return nil, fmt.Errorf("encoding the recorded outcome %s: %w", it.ID, err)
	}
	var r earlyRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding the recorded outcome %s: %w", it.ID, err)
	}
	return &Outcome{Status: r.Status, LandedAt: r.LandedAt, MergedVia: r.MergedVia, RevertedBy: r.RevertedBy}, nil
}

// recordEarlyOutcome keeps o for the trace of (repo, sha) to take when it
// arrives, merged with any outcome already waiting as a trace would merge
// them (a revert is not undone by a later landing).
func (s *Service) recordEarlyOutcome(ctx context.Context, repo, sha string, o Outcome) error {
	prev, err := s.earlyOutcome(ctx, repo, sha)
	if err != nil {
		return err
	}
	t := CommitTrace{Status: StatusPending}
	if prev != nil {
		applyOutcome(&t, *prev)
	}
	if !applyOutcome(&t, o) && prev != nil {
		return nil
	}
	content, err := toMap(earlyRecord{Status: t.Status, LandedAt: t.LandedAt, MergedVia: t.MergedVia, RevertedBy: t.RevertedBy, Repo: repo, SHA: sha})
	if err != nil {
		return fmt.Errorf("encoding the outcome of %s: %w", ItemID(repo, sha), err)
	}
	zero, one := 0.0, 1.0
	it := h4r.Item{
		ID: EarlyOutcomeItemID(repo, sha), Kind: KindEarlyOutcome,
		Text:    fmt.Sprintf("GitHub outcome %s of %s@%s, waiting for its trace", t.Status, repo, sha),
		Content: content,
		Metadata: h4r.Metadata{
			CreatedAt: s.now().UTC(), Trust: &zero, Sensitivity: &one,
			RestrictedToGroups: []string{earlyOutcomeGroup}, Source: "github",
			Extra: map[string]any{"repo": repo, "sha": sha},
		},
	}
	if _, err := s.store.Upsert(ctx, []h4r.Item{it}); err != nil {
		return fmt.Errorf("recording the outcome of %s before its trace: %w", ItemID(repo, sha), err)
	}
	return nil
}

// publishDecisions fans each decision of t out on the decision subject,
// when one is configured. Best effort: the trace is stored.
func (s *Service) publishDecisions(ctx context.Context, t *CommitTrace) {
	if s.decisionPub == nil {
		return
	}
	for _, d := range t.Decisions {
		data, err := json.Marshal(d)
		if err == nil {
			err = s.decisionPub.Publish(s.decisionSubj, data)
		}
		if err != nil {
			s.log.WarnContext(ctx, "publishing a decision failed", "subject", s.decisionSubj, "repo", t.Repo, "sha", t.SHA, "error", err)
			return
		}
	}
}
