package trace

import (
	"context"
	"fmt"
	"math"

	"github.com/h4r/h4r"
)

// Stats is the document's GET /v1/stats answer. Storage counts what the
// store holds of traces and decisions: postgres_size_mb is their stored
// size (whichever store holds them), qdrant_vectors the item vectors of the
// vector index when one is configured.
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

// Stats counts traces and decisions. It reads every item once; it is an
// admin endpoint, not a hot path. vectors may be nil.
func (s *Service) Stats(ctx context.Context, vectors VectorCounter) (*Stats, error) {
	st := &Stats{Decisions: DecisionCounts{ByCategory: map[string]int{}}}
	repos := map[string]bool{}
	var size int
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
		default:
			return nil
		}
		size += it.Metadata.ByteSize
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counting traces: %w", err)
	}
	st.Repos = len(repos)
	st.Storage.PostgresSizeMB = math.Round(float64(size)/(1<<20)*100) / 100
	if vectors != nil {
		n, err := vectors(ctx)
		if err != nil {
			return nil, fmt.Errorf("counting vectors: %w", err)
		}
		st.Storage.QdrantVectors = n
	}
	return st, nil
}
