package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/h4r/h4r"
)

// VectorFeedback are the parameters of pseudo-relevance feedback on the
// vector side: the query vector is moved toward the vectors of the first
// pass's Docs best items (fused full-text and vector relevance), Weight
// being the share of their mean in the new vector, and the vector search
// runs again with it. Docs or Weight zero: off.
//
// MinSpread, when positive, makes it selective: it runs only for a query
// whose full-text first pass has a clear top, the standard deviation of
// the best SpreadDepth scores over the best one being at least MinSpread.
// A flat top says the words of the query match many texts alike, and
// its best items are then no better evidence of the topic than the query
// itself (a query-performance predictor in the manner of normalised query
// commitment, Shtok et al.).
type VectorFeedback struct {
	Docs      int
	Weight    float64
	MinSpread float64
}

// SpreadDepth is how many of the best full-text scores
// VectorFeedback.MinSpread measures.
const SpreadDepth = 10

// feedbackLookahead times VectorFeedback.Docs is how many of the first
// pass's best items are cleared to find Docs the caller may see.
const feedbackLookahead = 4

// nearGenerator is a vector generator that can search near a query moved
// toward texts (embed.Generator.GenerateNear).
type nearGenerator interface {
	GenerateNear(ctx context.Context, q h4r.CandidateQuery, texts []string, weight float64) ([]h4r.Hit, error)
}

// vectorFeedback replaces the vector run's hits by those of a second
// vector search from the query moved toward the first pass's best items
// (Settings.VectorFeedback). Unlike term expansion it adds no word to
// full-text search. The best items are read as the slicer clears them for
// spec: one it may not see is passed over, and a redacted text lends
// nothing, so that what the caller cannot read never shapes its query. A second
// search that fails keeps the first pass's hits, with a warning.
func (e *Engine) vectorFeedback(ctx context.Context, spec h4r.Specialist, runs []generatorRun, gens []h4r.Generator, q h4r.CandidateQuery) []string {
	fb := e.settings.VectorFeedback
	if fb.Docs <= 0 || fb.Weight <= 0 {
		return nil
	}
	vi := -1
	var near nearGenerator
	for i := range runs {
		if runs[i].name != h4r.GenVector || runs[i].err != nil || runs[i].warning != "" || i >= len(gens) {
			continue
		}
		if g, ok := gens[i].(nearGenerator); ok {
			vi, near = i, g
		}
	}
	if vi < 0 || len(runs[vi].hits) == 0 {
		return nil
	}
	view := e.clearedView(ctx, spec)
	if fb.MinSpread > 0 && firstPassSpread(runs, view) < fb.MinSpread {
		return nil
	}
	// A hidden item is passed over and the next visible one takes its
	// place, as in term expansion; the slicer clears a few times k at once.
	top := e.firstPassTop(runs, feedbackLookahead*fb.Docs)
	var texts []string
	for _, it := range view(top) {
		if it != nil && it.Text != "" {
			texts = append(texts, it.Text)
			if len(texts) == fb.Docs {
				break
			}
		}
	}
	if len(texts) == 0 {
		return nil
	}
	gctx, cancel := context.WithTimeout(ctx, e.settings.GeneratorTimeout)
	defer cancel()
	t0 := time.Now()
	hits, err := near.GenerateNear(gctx, q, texts, fb.Weight)
	runs[vi].took += time.Since(t0)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return nil // the pack's own deadline: it says so itself
		}
		return []string{fmt.Sprintf("generator %s: feedback on the query vector failed, the hits are the first pass's: %v", h4r.GenVector, err)}
	}
	runs[vi].hits = hits
	return nil
}

// firstPassTop returns the n items of the full-text and vector runs with
// the best fused relevance (the configured fusion), ties by ID.
func (e *Engine) firstPassTop(runs []generatorRun, n int) []*h4r.Item {
	var order []string
	hits := map[string][]h4r.Hit{}
	for _, r := range runs {
		if (r.name == h4r.GenFullText || r.name == h4r.GenVector) && r.err == nil && len(r.hits) > 0 {
			order = append(order, r.name)
			hits[r.name] = r.hits
		}
	}
	cands := h4r.Merge(order, hits)
	rel := e.settings.Fusion.Relevance(cands)
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if rel[idx[a]] != rel[idx[b]] {
			return rel[idx[a]] > rel[idx[b]]
		}
		return cands[idx[a]].Item.ID < cands[idx[b]].Item.ID
	})
	out := make([]*h4r.Item, 0, min(n, len(idx)))
	for _, i := range idx[:min(n, len(idx))] {
		out = append(out, cands[i].Item)
	}
	return out
}

// firstPassSpread is the standard deviation of the best SpreadDepth
// full-text scores of items the caller may see, over the best of them (0
// with fewer than two, or none positive). The hits are read as view
// clears them, as the feedback reads them: a hidden item is passed over
// and the next visible one takes its place, so that what the caller cannot
// see never decides whether its query vector moves.
func firstPassSpread(runs []generatorRun, view func([]*h4r.Item) []*h4r.Item) float64 {
	var hits []h4r.Hit
	for _, r := range runs {
		if r.name == h4r.GenFullText && r.err == nil {
			hits = r.hits
		}
	}
	idx := make([]int, len(hits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if hits[idx[a]].Score != hits[idx[b]].Score {
			return hits[idx[a]].Score > hits[idx[b]].Score
		}
		return hits[idx[a]].Item.ID < hits[idx[b]].Item.ID
	})
	idx = idx[:min(len(idx), feedbackLookahead*SpreadDepth)]
	// Cleared a few at a time, as many as are still wanted: most callers
	// see the best SpreadDepth, and each item cleared costs a decision.
	var scores []float64
	for next := 0; next < len(idx) && len(scores) < SpreadDepth; {
		end := min(len(idx), next+SpreadDepth-len(scores))
		items := make([]*h4r.Item, 0, end-next)
		for _, j := range idx[next:end] {
			items = append(items, hits[j].Item)
		}
		for i, it := range view(items) {
			if it != nil {
				scores = append(scores, hits[idx[next+i]].Score)
			}
		}
		next = end
	}
	if len(scores) < 2 || !(scores[0] > 0) || math.IsInf(scores[0], 1) {
		return 0
	}
	var mean float64
	for _, s := range scores {
		mean += s
	}
	mean /= float64(len(scores))
	var v float64
	for _, s := range scores {
		v += (s - mean) * (s - mean)
	}
	return math.Sqrt(v/float64(len(scores))) / scores[0]
}
