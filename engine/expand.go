package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
)

// WithQueryExpansion sets the analyzer that picks expansion words (its stop
// words are never added) and key, which groups the words one index term
// stands for (the stores' stemmer; nil: words as they are). Without it the
// engine expands with analysis.Default() and no grouping.
func WithQueryExpansion(a *analysis.Analyzer, key func(string) string) Option {
	return func(e *Engine) { e.expander, e.expandKey = a, key }
}

// expandWanted tells whether req's full-text search gets pseudo-relevance
// feedback: as the request says, else as configured.
func (e *Engine) expandWanted(req *h4r.ContextRequest) bool {
	if req.Query.Expand != nil {
		return *req.Query.Expand
	}
	return e.settings.ExpandQueries
}

// expand is the second full-text pass of pseudo-relevance feedback: each
// full-text run with at least Expansion.Docs hits is asked again with its
// query expanded from the hits the policy lets spec see (analysis.Expand),
// and the second answer replaces the first. Only items spec may see feed
// the expansion: words from the others would rank what it sees by what it
// may not. A second pass that fails keeps the first pass's hits, with a
// warning.
func (e *Engine) expand(ctx context.Context, spec h4r.Specialist, req *h4r.ContextRequest, runs []generatorRun, gens []h4r.Generator, q h4r.CandidateQuery) []string {
	p := e.settings.Expansion
	if !e.expandWanted(req) || !p.Valid() {
		return nil
	}
	var warnings []string
	for i := range runs {
		r := &runs[i]
		if r.name != h4r.GenFullText || r.err != nil || len(r.hits) < p.Docs || i >= len(gens) {
			continue
		}
		items := make([]*h4r.Item, 0, p.Docs)
		for _, h := range r.hits[:p.Docs] {
			items = append(items, h.Item)
		}
		visible := map[string]bool{}
		for _, id := range e.permitted(ctx, spec, items) {
			visible[id] = true
		}
		docs := make([]analysis.FeedbackDoc, 0, p.Docs)
		for _, h := range r.hits[:p.Docs] {
			if visible[h.Item.ID] {
				docs = append(docs, analysis.FeedbackDoc{Text: h.Item.Text, Score: h.Score})
			}
		}
		terms := e.expander.Expand(q.Text, docs, p, e.expandKey)
		if analysis.SameTerms(terms, e.expander.Terms(q.Text)) {
			continue
		}
		eq := q
		eq.Text = analysis.QueryText(terms)
		gctx, cancel := context.WithTimeout(ctx, e.settings.GeneratorTimeout)
		t0 := time.Now()
		hits, err := gens[i].Generate(gctx, eq)
		cancel()
		r.took += time.Since(t0)
		var fallback *h4r.FallbackError
		if err != nil && !errors.As(err, &fallback) {
			warnings = append(warnings, fmt.Sprintf("generator %s: the expanded query failed, the hits are the first pass's: %v", r.name, err))
			continue
		}
		r.hits = hits
	}
	return warnings
}
