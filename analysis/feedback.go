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
// for q, best first; when there are at least p.Docs of them and their
// scores do not stand out (p.Skip), q's text is expanded from the top
// p.Docs (Expand, grouped by key) and gen is asked again, and the two
// passes are fused (p.FirstPass). usable, when not nil, says which of the
// top hits may feed the expansion (the caller's policy); the others are
// left out of the relevance model. It returns first unchanged, and false,
// when nothing was expanded; a failed second pass returns its error.
func (a *Analyzer) Feedback(ctx context.Context, gen h4r.Generator, q h4r.CandidateQuery, first []h4r.Hit, p Expansion, key func(string) string, usable func([]*h4r.Item) []bool) ([]h4r.Hit, bool, error) {
	if !p.Valid() || len(first) < p.Docs {
		return first, false, nil
	}
	top := first[:p.Docs]
	scores := make([]float64, len(top))
	for i, h := range top {
		scores[i] = h.Score
	}
	if p.Skip(scores) {
		return first, false, nil
	}
	// The contrast's background is every hit; else the top alone is read.
	feed := top
	if p.Contrast {
		feed = first
	}
	use := make([]bool, len(feed))
	if usable != nil {
		items := make([]*h4r.Item, len(feed))
		for i, h := range feed {
			items[i] = h.Item
		}
		use = usable(items)
	} else {
		for i := range use {
			use[i] = true
		}
	}
	var docs, background []FeedbackDoc
	for i, h := range feed {
		if i < len(use) && use[i] {
			d := FeedbackDoc{Text: h.Item.Text, Score: h.Score}
			if i < p.Docs {
				docs = append(docs, d)
			}
			if p.Contrast {
				background = append(background, d)
			}
		}
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
