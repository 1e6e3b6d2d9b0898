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
	return func(e *Engine) { e.expansion = expansion{analyzer: a, key: key} }
}

// expansion is what picks expansion words: the analyzer (its stop words
// are never added) and the key that groups words by index term.
type expansion struct {
	analyzer *analysis.Analyzer
	key      func(string) string
}

// Expanding returns an engine that shares e's generators, slicer and pack
// slots but expands requests that do not say when on is true, with p: what
// a benchmark compares expansion settings with, on one loaded store.
func (e *Engine) Expanding(on bool, p analysis.Expansion) *Engine {
	c := *e
	c.settings.ExpandQueries, c.settings.Expansion = on, p
	return &c
}

// expand is the second full-text pass of pseudo-relevance feedback
// (analysis.Feedback), for requests that ask for it (query.expand, else
// Settings.ExpandQueries): each full-text run's hits are replaced by the
// expanded search's. The expansion reads the hits as the slicer clears
// them for spec: the ones it may not see lend nothing, and a redacted
// text lends none of its words. Otherwise the words of what it may not
// read would rank what it sees, and they come back as the words the
// second pass matched. A second pass that fails keeps the first pass's
// hits, with a warning.
func (e *Engine) expand(ctx context.Context, spec h4r.Specialist, req *h4r.ContextRequest, runs []generatorRun, gens []h4r.Generator, q h4r.CandidateQuery) []string {
	on := e.settings.ExpandQueries
	if req.Query.Expand != nil {
		on = *req.Query.Expand
	}
	if !on {
		return nil
	}
	view := e.clearedView(ctx, spec)
	var warnings []string
	for i := range runs {
		r := &runs[i]
		if r.name != h4r.GenFullText || r.err != nil || i >= len(gens) {
			continue
		}
		gctx, cancel := context.WithTimeout(ctx, e.settings.GeneratorTimeout)
		t0 := time.Now()
		hits, _, err := e.expansion.analyzer.Feedback(gctx, gens[i], q, r.hits, e.settings.Expansion, e.expansion.key, view)
		cancel()
		r.took += time.Since(t0)
		var fallback *h4r.FallbackError
		if err != nil && !errors.As(err, &fallback) {
			warnings = append(warnings, fmt.Sprintf("generator %s: pseudo-relevance feedback failed, the hits are the first pass's: %v", r.name, err))
			continue
		}
		r.hits = hits
	}
	return warnings
}

// clearedView returns the view of items that feedback reads, as the slicer
// clears them for spec: an item it may not see is nil, and a redacted item
// has no text (the redaction marker is no word of it). The view remembers
// what it cleared, by item (the same *h4r.Item, as the stores' item caches
// hand out), so that reading the first pass twice (vector feedback's spread
// gate, then its best items) clears each item once.
func (e *Engine) clearedView(ctx context.Context, spec h4r.Specialist) func([]*h4r.Item) []*h4r.Item {
	seen := map[*h4r.Item]*h4r.Item{} // nil: hidden
	return func(items []*h4r.Item) []*h4r.Item {
		var fresh []*h4r.Item
		for _, it := range items {
			if _, ok := seen[it]; !ok {
				fresh = append(fresh, it)
			}
		}
		if len(fresh) > 0 {
			cleared := make(map[string]*h4r.Item, len(fresh))
			for _, c := range e.slicer.Clear(ctx, spec, fresh) {
				cleared[c.ID()] = c.Item()
			}
			for _, it := range fresh {
				c, ok := cleared[it.ID]
				if ok && c.Text != it.Text { // the text was redacted: the marker is no word of it
					cp := *c
					cp.Text = ""
					c = &cp
				}
				seen[it] = c
			}
		}
		out := make([]*h4r.Item, len(items))
		for i, it := range items {
			out[i] = seen[it]
		}
		return out
	}
}
