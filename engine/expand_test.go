package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/engine"
	"github.com/h4r/h4r/index/bm25"
)

// recordingFullText is a full-text generator that remembers the texts it
// was asked.
type recordingFullText struct {
	h4r.Generator
	mu    sync.Mutex
	asked []string
}

func (g *recordingFullText) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	g.mu.Lock()
	g.asked = append(g.asked, q.Text)
	g.mu.Unlock()
	return g.Generator.Generate(ctx, q)
}

func TestQueryExpansion(t *testing.T) {
	a := openDemo(t)
	p := analysis.Expansion{Docs: 5, Terms: 30, OriginalWeight: 0.5}
	on, off := true, false
	tests := []struct {
		name      string
		byDefault bool
		expand    *bool
		passes    int
	}{
		{"asked for", false, &on, 2},
		{"asked against", true, &off, 1},
		{"the default on", true, nil, 2},
		{"the default off", false, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingFullText{Generator: a.Store.FullText()}
			e := newEngineWith(t, a, rec, tt.byDefault, p)
			pk := auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryKeyword, Text: "login test failures with selector issues", Expand: tt.expand}})
			if len(rec.asked) != tt.passes {
				t.Fatalf("the full-text generator was asked %d times (%q), want %d", len(rec.asked), rec.asked, tt.passes)
			}
			if pk.Status != h4r.StatusOK || len(pk.Explainability.Warnings) != 0 {
				t.Errorf("status %s, warnings %v: want ok, none", pk.Status, pk.Explainability.Warnings)
			}
			if tt.passes == 2 && len(analysis.Words(rec.asked[1])) <= len(analysis.Words(rec.asked[0])) {
				t.Errorf("second pass %q is no longer than the first %q", rec.asked[1], rec.asked[0])
			}
		})
	}
}

// An item the caller may not see must not lend its words to the expanded
// query: the environment dump is among the top hits, and the healer may
// not see it.
func TestQueryExpansionUsesOnlyPermittedItems(t *testing.T) {
	a := openDemo(t)
	p := analysis.Expansion{Docs: 5, Terms: 60, OriginalWeight: 0.5}
	const query = "runner environment dump triaging"
	first, err := a.Store.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: query, Limit: engine.DefaultCandidateLimit})
	if err != nil {
		t.Fatal(err)
	}
	top := first[:p.Docs]
	allowed := map[string]bool{}
	var every []analysis.FeedbackDoc
	denied := false
	for _, h := range top {
		every = append(every, analysis.FeedbackDoc{Text: h.Item.Text, Score: h.Score})
		if h.Item.ID == "ci-env-dump-18342" {
			denied = true
			continue
		}
		for _, w := range analysis.Words(h.Item.Text) {
			allowed[bm25.Term(w)] = true
		}
	}
	for _, w := range analysis.Words(query) {
		allowed[bm25.Term(w)] = true
	}
	leaks := func(text string) []string {
		var out []string
		for _, w := range analysis.Words(text) {
			if !allowed[bm25.Term(w)] && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
		return out
	}
	// Preconditions: the test can fail.
	if !denied {
		t.Fatalf("the environment dump is not among the top %d hits %v", p.Docs, hitIDs(top))
	}
	if l := leaks(analysis.QueryText(analysis.Default().Expand(query, every, nil, p, bm25.Term))); len(l) == 0 {
		t.Fatal("expanding from every top hit adds no word only the dump holds: the test would pass whatever the engine does")
	}

	rec := &recordingFullText{Generator: a.Store.FullText()}
	e := newEngineWith(t, a, rec, true, p)
	auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Text: query}})
	if len(rec.asked) != 2 {
		t.Fatalf("asked %d times, want 2", len(rec.asked))
	}
	if l := leaks(rec.asked[1]); len(l) > 0 {
		t.Errorf("the expanded query %q holds %v, words of an item the caller may not see", rec.asked[1], l)
	}
}

// newEngineWith is the production wiring over a's store, with fulltext as
// the full-text generator and pseudo-relevance feedback set to p, on for
// requests that do not say when byDefault.
func newEngineWith(t *testing.T, a *app.App, fulltext h4r.Generator, byDefault bool, p analysis.Expansion) *engine.Engine {
	t.Helper()
	settings := shippedSettings(patient)
	settings.ExpandQueries, settings.Expansion = byDefault, p
	e, err := engine.New(
		engine.WithTextGenerators(fulltext),
		engine.WithGraphGenerator(a.Store.Graph()),
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

func hitIDs(hits []h4r.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Item.ID
	}
	return ids
}
