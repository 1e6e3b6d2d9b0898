package mcptools

import (
	"context"
	"fmt"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/rag"
)

// RAG is the retrieval contract's query and feedback over stored packs (rag.Service).
type RAG interface {
	Query(ctx context.Context, spec h4r.Specialist, r rag.QueryRequest) (*rag.QueryResponse, error)
	Feedback(ctx context.Context, spec h4r.Specialist, r rag.FeedbackRequest) error
}

// FeedbackResult is rag_feedback's answer.
type FeedbackResult struct {
	Accepted bool `json:"accepted"`
}

// AddRAG adds the retrieval contract's function tools rag_query and rag_feedback.
// rag_query stores its pack, so its context_pack.id is what rag_feedback
// takes; a useful verdict counts as a use of the pack's items (the
// frequency signal). The model does not name a session: the session and
// agent recorded with the pack are "mcp" and the caller's specialist.
func AddRAG(r *Registry, svc RAG, timeout time.Duration) {
	AddTool(r, "rag_query", "rag_query: a stored context pack {context_pack{id, tokens, chunks[{id, text, score, source, path, sha, line_range}]}, citations}; pass its id to rag_feedback.", auth.RouteRead,
		func(ctx context.Context, c Caller, in rag.QueryToolArgs) (*rag.QueryResponse, error) {
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			res, err := svc.Query(ctx, c.Specialist, in.Request("mcp", c.Specialist.ID))
			if err != nil {
				return nil, fmt.Errorf("answering rag_query: %w", err)
			}
			return res, nil
		})
	AddTool(r, "rag_feedback", "rag_feedback: a verdict on a pack rag_query returned {context_pack_id, verdict: useful | partial | wrong, notes?}.", auth.RouteRead,
		func(ctx context.Context, c Caller, in rag.FeedbackRequest) (FeedbackResult, error) {
			if err := svc.Feedback(ctx, c.Specialist, in); err != nil {
				return FeedbackResult{}, err
			}
			return FeedbackResult{Accepted: true}, nil
		})
}
