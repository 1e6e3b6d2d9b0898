package app

import (
	"context"
	"fmt"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/rag"
)

// RAG returns the retrieval contract's query and feedback service over the store as
// opened (both stores keep packs and feedback), or nil when the store does
// not keep them. A useful verdict counts as a use of the pack's items
// through the store's access counts.
func (a *App) RAG() *rag.Service {
	ps, ok := a.base.(rag.Store)
	if !ok {
		return nil
	}
	return rag.New(ps, a.Engine,
		rag.WithRetention(a.Config.PackRetention),
		rag.WithAccessRecorder(a.Store),
		rag.WithPolicyRevision(func() string { return a.Policy.Revision() }),
	)
}

// EachFeedback visits every stored verdict on a pack, oldest first (the
// labels h4r bench tune --from-feedback reads).
func (a *App) EachFeedback(ctx context.Context, fn func(h4r.Feedback) error) error {
	fb, ok := a.base.(interface {
		EachFeedback(ctx context.Context, fn func(h4r.Feedback) error) error
	})
	if !ok {
		return fmt.Errorf("the store %T keeps no feedback", a.base)
	}
	return fb.EachFeedback(ctx, fn)
}

// PackHistory lists delivered packs and the verdicts on them (the
// console's pack browser).
type PackHistory interface {
	PacksOf(ctx context.Context, principal string, limit, offset int) ([]h4r.StoredPack, int, error)
	FeedbackOn(ctx context.Context, packID string) ([]h4r.Feedback, error)
}

// Packs returns the store's pack history, or nil when the store keeps no
// packs.
func (a *App) Packs() PackHistory {
	ph, ok := a.base.(PackHistory)
	if !ok {
		return nil
	}
	return ph
}
