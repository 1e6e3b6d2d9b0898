package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/engine"
)

// nearVector is a vector generator whose first pass returns first and
// whose second search (GenerateNear) returns near, remembering the texts
// it was moved toward.
type nearVector struct {
	first, near []h4r.Hit
	err         error
	mu          sync.Mutex
	texts       [][]string
	weights     []float64
}

func (g *nearVector) Name() string { return h4r.GenVector }

func (g *nearVector) Generate(context.Context, h4r.CandidateQuery) ([]h4r.Hit, error) {
	return g.first, nil
}

func (g *nearVector) GenerateNear(_ context.Context, _ h4r.CandidateQuery, texts []string, weight float64) ([]h4r.Hit, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.texts = append(g.texts, texts)
	g.weights = append(g.weights, weight)
	return g.near, g.err
}

// newFeedbackEngine is the production wiring over a's store with vec as
// the vector generator and feedback fb on the query vector.
func newFeedbackEngine(t *testing.T, a *app.App, vec h4r.Generator, fb engine.VectorFeedback) *engine.Engine {
	t.Helper()
	return newFeedbackEngineWith(t, a.Store.FullText(), vec, fb)
}

// demoItem reads one item of the demo corpus.
func demoItem(t *testing.T, a *app.App, id string) *h4r.Item {
	t.Helper()
	it, err := a.Store.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("reading %s: %v", id, err)
	}
	return it
}

func TestVectorFeedback(t *testing.T) {
	a := openDemo(t)
	const query = "runner environment dump triaging"
	first, err := a.Store.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: query, Limit: engine.DefaultCandidateLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 2 {
		t.Fatalf("the query finds %d full-text hits, want at least 2", len(first))
	}
	// near holds an item that no first pass finds: it is in the pack only
	// if the second search's hits replaced the first's.
	found := map[string]bool{}
	for _, h := range first {
		found[h.Item.ID] = true
	}
	var only *h4r.Item
	if err := a.Store.Each(t.Context(), func(it *h4r.Item) error {
		if only == nil && !found[it.ID] {
			only = it
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if only == nil {
		t.Fatal("every demo item is a full-text hit of the query")
	}
	firstVec := []h4r.Hit{{Item: first[0].Item, Score: 0.9}}
	tests := []struct {
		name      string
		fb        engine.VectorFeedback
		nearErr   error
		searched  bool
		inPack    bool
		warnsWith string
	}{
		{"off", engine.VectorFeedback{}, nil, false, false, ""},
		{"no weight is off", engine.VectorFeedback{Docs: 3}, nil, false, false, ""},
		{"on", engine.VectorFeedback{Docs: 3, Weight: 0.2}, nil, true, true, ""},
		{"a failed second search keeps the first pass", engine.VectorFeedback{Docs: 3, Weight: 0.2}, errors.New("index gone"), true, false, "feedback on the query vector failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vec := &nearVector{first: firstVec, near: []h4r.Hit{{Item: only, Score: 0.8}}, err: tt.nearErr}
			if tt.nearErr != nil {
				vec.near = nil
			}
			e := newFeedbackEngine(t, a, vec, tt.fb)
			pk := auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Text: query}})
			if got := len(vec.texts) > 0; got != tt.searched {
				t.Fatalf("second vector search run: %v, want %v", got, tt.searched)
			}
			if tt.searched {
				if n := len(vec.texts[0]); n == 0 || n > tt.fb.Docs {
					t.Errorf("moved toward %d texts, want 1 to %d", n, tt.fb.Docs)
				}
				if vec.weights[0] != tt.fb.Weight {
					t.Errorf("weight %v, want %v", vec.weights[0], tt.fb.Weight)
				}
			}
			_, explainedOnly := explained(pk, only.ID)
			if explainedOnly != tt.inPack {
				t.Errorf("the second search's hit %s among the candidates: %v, want %v", only.ID, explainedOnly, tt.inPack)
			}
			warned := slices.ContainsFunc(pk.Explainability.Warnings, func(w string) bool { return tt.warnsWith != "" && strings.Contains(w, tt.warnsWith) })
			if warned != (tt.warnsWith != "") {
				t.Errorf("warnings %q, want one saying %q", pk.Explainability.Warnings, tt.warnsWith)
			}
		})
	}
}

// An item the caller may not see must not move its query vector: the
// environment dump is the best first-pass hit, and the healer may not see
// it.
func TestVectorFeedbackUsesOnlyPermittedItems(t *testing.T) {
	a := openDemo(t)
	const query = "runner environment dump triaging"
	const denied = "ci-env-dump-18342"
	dump := demoItem(t, a, denied)
	first, err := a.Store.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: query, Limit: engine.DefaultCandidateLimit})
	if err != nil {
		t.Fatal(err)
	}
	const docs = 5
	if !slices.ContainsFunc(first[:min(docs, len(first))], func(h h4r.Hit) bool { return h.Item.ID == denied }) {
		t.Fatalf("the environment dump is not among the top %d full-text hits %v", docs, hitIDs(first))
	}
	// The vector side finds the dump first too: it is the first pass's
	// best fused item, which a feedback that ignored the policy would read.
	vec := &nearVector{first: []h4r.Hit{{Item: dump, Score: 0.9}}}
	e := newFeedbackEngine(t, a, vec, engine.VectorFeedback{Docs: docs, Weight: 0.2})
	auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Text: query}})
	if len(vec.texts) != 1 {
		t.Fatalf("second vector searches: %d, want 1", len(vec.texts))
	}
	if slices.Contains(vec.texts[0], dump.Text) {
		t.Errorf("the query vector moved toward the text of %s, which the caller may not see", denied)
	}
	// The hidden item is passed over: the next visible ones make up k.
	if len(first) > docs && len(vec.texts[0]) != docs {
		t.Errorf("moved toward %d texts, want %d: the next visible items take the hidden one's place", len(vec.texts[0]), docs)
	}
}
