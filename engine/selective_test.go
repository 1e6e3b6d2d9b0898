package engine_test

import (
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/engine"
	"github.com/h4r/h4r/index/bm25"
)

// newSelectiveEngine is the production wiring over a's store with fulltext
// and vec as the text generators (vec nil: none), and pseudo-relevance
// feedback p on for requests that do not say.
func newSelectiveEngine(t *testing.T, a *app.App, fulltext, vec h4r.Generator, p analysis.Expansion) *engine.Engine {
	t.Helper()
	settings := shippedSettings(patient)
	settings.ExpandQueries, settings.Expansion = true, p
	gens := []h4r.Generator{fulltext}
	if vec != nil {
		gens = append(gens, vec)
	}
	e, err := engine.New(
		engine.WithTextGenerators(gens...),
		engine.WithSlicer(productionSlicer(t)),
		engine.WithClock(fixedClock),
		engine.WithQueryExpansion(analysis.Default(), bm25.Term),
		engine.WithSettings(settings),
	)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// vectorHits scores items as a vector pass would, best first.
func vectorHits(items ...*h4r.Item) []h4r.Hit {
	hits := make([]h4r.Hit, len(items))
	for i, it := range items {
		hits[i] = h4r.Hit{Item: it, Score: 0.9 - 0.01*float64(i)}
	}
	return hits
}

// demoOutside returns n demo items that are not among hits.
func demoOutside(t *testing.T, a *app.App, hits []h4r.Hit, n int) []*h4r.Item {
	t.Helper()
	in := map[string]bool{}
	for _, h := range hits {
		in[h.Item.ID] = true
	}
	var out []*h4r.Item
	if err := a.Store.Each(t.Context(), func(it *h4r.Item) error {
		if len(out) < n && !in[it.ID] {
			out = append(out, it)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(out) < n {
		t.Fatalf("%d demo items outside the hits, want %d", len(out), n)
	}
	return out
}

func TestSelectiveExpansion(t *testing.T) {
	a := openDemo(t)
	const query = "login test failures with selector issues"
	first, err := a.Store.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: query, Limit: engine.DefaultCandidateLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 4 {
		t.Fatalf("the query finds %d full-text hits, want at least 4", len(first))
	}
	// agreeing shares the healer's full-text top 3 with the vector pass;
	// disagreeing shares nothing.
	var items []*h4r.Item
	for _, h := range first {
		items = append(items, h.Item)
	}
	var seen []*h4r.Item
	for _, c := range productionSlicer(t).Clear(t.Context(), healer(), items) {
		seen = append(seen, c.Item())
	}
	if len(seen) < 3 {
		t.Fatalf("the healer sees %d of the full-text hits, want at least 3", len(seen))
	}
	agreeing := vectorHits(seen[:3]...)
	disagreeing := vectorHits(demoOutside(t, a, first, 3)...)
	p := analysis.Expansion{Docs: 3, Terms: 30, OriginalWeight: 0.5, Agreement: 3}
	on := true
	tests := []struct {
		name   string
		vec    []h4r.Hit // nil: no vector generator
		gate   int
		expand *bool
		passes int
	}{
		{"the passes agree", agreeing, 3, nil, 2},
		{"the passes disagree", disagreeing, 3, nil, 1},
		{"they agree on fewer than the gate", agreeing, 4, nil, 1},
		{"no gate", disagreeing, 0, nil, 2},
		{"no vector pass agrees on nothing", nil, 3, nil, 1},
		{"a request that asks for expansion gets it", disagreeing, 3, &on, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingFullText{Generator: a.Store.FullText()}
			var vec h4r.Generator
			if tt.vec != nil {
				vec = &nearVector{first: tt.vec}
			}
			p.Agreement = tt.gate
			e := newSelectiveEngine(t, a, rec, vec, p)
			pk := auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: query, Expand: tt.expand}})
			if len(rec.asked) != tt.passes {
				t.Errorf("the full-text generator was asked %d times (%q), want %d", len(rec.asked), rec.asked, tt.passes)
			}
			if pk.Status != h4r.StatusOK {
				t.Errorf("status %s, want ok", pk.Status)
			}
		})
	}
}

// An item the caller may not see must not decide whether its query is
// expanded: the environment dump is in both first passes' top hits, and
// the healer may not see it, so the passes agree on nothing it may see.
func TestSelectiveExpansionUsesOnlyPermittedItems(t *testing.T) {
	a := openDemo(t)
	const query = "runner environment dump triaging"
	const denied = "ci-env-dump-18342"
	first, err := a.Store.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: query, Limit: engine.DefaultCandidateLimit})
	if err != nil {
		t.Fatal(err)
	}
	var dump, visible *h4r.Item
	for _, h := range first[:min(analysis.AgreementDepth, len(first))] {
		if h.Item.ID == denied {
			dump = h.Item
		} else if visible == nil {
			visible = h.Item
		}
	}
	if dump == nil || visible == nil {
		t.Fatalf("the full-text top %d %v want the environment dump and a visible item", analysis.AgreementDepth, hitIDs(first))
	}
	p := analysis.Expansion{Docs: 3, Terms: 30, OriginalWeight: 0.5, Agreement: 1}
	others := demoOutside(t, a, first, 3)
	for _, tt := range []struct {
		name   string
		shared *h4r.Item
		passes int
	}{
		{"a visible item in both", visible, 2}, // the test can fail
		{"only the hidden item in both", dump, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingFullText{Generator: a.Store.FullText()}
			vec := &nearVector{first: vectorHits(append([]*h4r.Item{tt.shared}, others...)...)}
			e := newSelectiveEngine(t, a, rec, vec, p)
			auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: query}})
			if len(rec.asked) != tt.passes {
				t.Errorf("the full-text generator was asked %d times, want %d", len(rec.asked), tt.passes)
			}
		})
	}
}
