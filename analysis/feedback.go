package analysis

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/h4r/h4r"
)

// Feedback is pseudo-relevance feedback over any full-text generator, the
// one implementation both stores are searched with: first holds gen's hits
// for q, best first; when the top p.Docs of them (the feedback documents)
// have scores that do not stand out (p.Skip), q's text is expanded from
// them (Expand, grouped by key) and gen is asked again, and the two passes
// are fused (p.FirstPass).
//
// view, when not nil, is the caller's view of hits' items: each item as
// the caller would receive it, nil for one it may not see. Only what the
// caller sees takes part: the feedback documents are the top p.Docs hits
// it may see, each lending its text as received (a redacted text lends
// nothing), and the contrast's background is every hit it may see. So the
// expansion tells nothing the caller could not read itself. When fewer
// than p.Docs hits are left, nothing is expanded.
//
// It returns first unchanged, and false, when nothing was expanded; a
// failed second pass returns its error.
func (a *Analyzer) Feedback(ctx context.Context, gen h4r.Generator, q h4r.CandidateQuery, first []h4r.Hit, p Expansion, key func(string) string, view func([]*h4r.Item) []*h4r.Item) ([]h4r.Hit, bool, error) {
	if !p.Valid() || len(first) < p.Docs {
		return first, false, nil
	}
	docs, background := feedbackDocs(first, p, view)
	if len(docs) < p.Docs {
		return first, false, nil
	}
	scores := make([]float64, len(docs))
	for i, d := range docs {
		scores[i] = d.Score
	}
	if p.Skip(scores) {
		return first, false, nil
	}
	if !p.Contrast {
		background = nil
	}
	terms := a.Expand(q.Text, docs, background, p, key)
	if SameTerms(terms, a.Terms(q.Text)) {
		return first, false, nil
	}
	eq := q
	eq.Text = QueryText(terms)
	second, err := gen.Generate(ctx, eq)
	if err != nil {
		return first, false, fmt.Errorf("the expanded query: %w", err)
	}
	return fuse(first, second, p, q.Limit), true, nil
}

// fuse merges the two passes' hits by p.Fuse: best first, ties by id, at
// most limit (0: all).
func fuse(first, second []h4r.Hit, p Expansion, limit int) []h4r.Hit {
	if p.FirstPass == 0 {
		return second
	}
	items := make(map[string]*h4r.Item, len(first)+len(second))
	s1 := make(map[string]float64, len(first))
	s2 := make(map[string]float64, len(second))
	for _, h := range first {
		items[h.Item.ID], s1[h.Item.ID] = h.Item, h.Score
	}
	for _, h := range second {
		items[h.Item.ID], s2[h.Item.ID] = h.Item, h.Score
	}
	fused := p.Fuse(s1, s2)
	out := make([]h4r.Hit, 0, len(fused))
	for id, sc := range fused {
		out = append(out, h4r.Hit{Item: items[id], Score: sc})
	}
	slices.SortFunc(out, func(a, b h4r.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Item.ID, b.Item.ID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// feedbackDocs returns the top p.Docs hits of first the caller may see
// (view), and with p.Contrast every such hit, as feedback documents. The
// view is asked in windows of p.Docs hits down the ranking until enough
// are found, so that a caller who sees the top asks about no more.
func feedbackDocs(first []h4r.Hit, p Expansion, view func([]*h4r.Item) []*h4r.Item) (docs, background []FeedbackDoc) {
	for lo := 0; lo < len(first) && (len(docs) < p.Docs || p.Contrast); {
		hi := min(len(first), lo+p.Docs)
		if p.Contrast {
			hi = len(first)
		}
		items := make([]*h4r.Item, hi-lo)
		for i, h := range first[lo:hi] {
			items[i] = h.Item
		}
		seen := items
		if view != nil {
			seen = view(items)
		}
		for i, it := range seen {
			if it == nil || i >= len(items) {
				continue
			}
			d := FeedbackDoc{Text: it.Text, Score: first[lo+i].Score}
			if len(docs) < p.Docs {
				docs = append(docs, d)
			}
			background = append(background, d)
		}
		lo = hi
	}
	return docs, background
}
