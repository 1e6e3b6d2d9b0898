package trace

import (
	"context"
	"fmt"
	"math"

	"github.com/h4r/h4r"
)

// Stats is GET /v1/stats's answer. postgres_size_mb is the size of the
// store's data (on Postgres its schema's tables with their indexes, so
// that tenants sharing a database do not count each other; on SQLite the
// database file), qdrant_vectors the item vectors of the vector index when one is
// configured.
type Stats struct {
	Traces    TraceCounts    `json:"traces"`
	Decisions DecisionCounts `json:"decisions"`
	Repos     int            `json:"repos"`
	Storage   StorageStats   `json:"storage"`
}

// TraceCounts counts traces by status.
type TraceCounts struct {
	Total    int `json:"total"`
	Pending  int `json:"pending"`
	Landed   int `json:"landed"`
	Reverted int `json:"reverted"`
}

// DecisionCounts counts decisions by category ("" is "uncategorized").
type DecisionCounts struct {
	Total      int            `json:"total"`
	ByCategory map[string]int `json:"by_category"`
}

// StorageStats sizes the store.
type StorageStats struct {
	PostgresSizeMB float64 `json:"postgres_size_mb"`
	QdrantVectors  int     `json:"qdrant_vectors"`
}

// VectorCounter counts the vectors of the vector index.
type VectorCounter func(ctx context.Context) (int, error)

// DatabaseSizer measures the store's database in bytes.
type DatabaseSizer func(ctx context.Context) (int64, error)

// Stats counts traces and decisions. It reads every item once; it is an
// admin endpoint, not a hot path. vectors and size may be nil (0).
func (s *Service) Stats(ctx context.Context, vectors VectorCounter, size DatabaseSizer) (*Stats, error) {
	st := &Stats{Decisions: DecisionCounts{ByCategory: map[string]int{}}}
	repos := map[string]bool{}
	err := s.store.Each(ctx, func(it *h4r.Item) error {
		switch it.Kind {
		case KindTrace:
			st.Traces.Total++
			switch it.Metadata.Extra["status"] {
			case string(StatusPending):
				st.Traces.Pending++
			case string(StatusLanded):
				st.Traces.Landed++
			case string(StatusReverted):
				st.Traces.Reverted++
			}
			if r, ok := it.Metadata.Extra["repo"].(string); ok {
				repos[r] = true
			}
		case KindDecision:
			st.Decisions.Total++
			c, _ := it.Metadata.Extra["category"].(string)
			if c == "" {
				c = "uncategorized"
			}
			st.Decisions.ByCategory[c]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counting traces: %w", err)
	}
	st.Repos = len(repos)
	if size != nil {
		n, err := size(ctx)
		if err != nil {
			return nil, fmt.Errorf("sizing the database: %w", err)
		}
		st.Storage.PostgresSizeMB = math.Round(float64(n)/(1<<20)*100) / 100
	}
	if vectors != nil {
		n, err := vectors(ctx)
		if err != nil {
			return nil, fmt.Errorf("counting vectors: %w", err)
		}
		st.Storage.QdrantVectors = n
	}
	return st, nil
}

// CountTraces counts the commit traces of repo ("": every repository).
// It reads every item once, as Stats does: an admin call.
func (s *Service) CountTraces(ctx context.Context, repo string) (int, error) {
	n := 0
	err := s.store.Each(ctx, func(it *h4r.Item) error {
		if it.Kind == KindTrace && (repo == "" || it.Metadata.Extra["repo"] == repo) {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("counting the traces of %q: %w", repo, err)
	}
	return n, nil
}
