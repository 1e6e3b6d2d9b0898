package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/engine"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/tokens"
)

// fixedFullText is a full-text generator that finds hits whatever it is
// asked.
type fixedFullText struct{ hits []h4r.Hit }

func (g fixedFullText) Name() string { return h4r.GenFullText }

func (g fixedFullText) Generate(context.Context, h4r.CandidateQuery) ([]h4r.Hit, error) {
	return g.hits, nil
}

// healerVisible returns n demo items the healer may see, other than skip.
func healerVisible(t *testing.T, a *app.App, n int, skip string) []*h4r.Item {
	t.Helper()
	var all []*h4r.Item
	if err := a.Store.Each(t.Context(), func(it *h4r.Item) error {
		if it.ID != skip {
			all = append(all, it)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var out []*h4r.Item
	for _, c := range productionSlicer(t).Clear(t.Context(), healer(), all) {
		if len(out) < n {
			out = append(out, c.Item())
		}
	}
	if len(out) < n {
		t.Fatalf("the healer sees %d demo items, want %d", len(out), n)
	}
	return out
}

// flatTop is a full-text first pass whose best item is top (score 10) over
// rest, which all score 1: its spread is that of top against a flat rest.
func flatTop(top *h4r.Item, rest []*h4r.Item) []h4r.Hit {
	hits := []h4r.Hit{{Item: top, Score: 10}}
	for _, it := range rest {
		hits = append(hits, h4r.Hit{Item: it, Score: 1})
	}
	return hits
}

func TestVectorFeedbackSpread(t *testing.T) {
	a := openDemo(t)
	items := healerVisible(t, a, engine.SpreadDepth+1, "")
	// The best of ten scores 10 and the rest 1: a spread of 2.7/10.
	clear := flatTop(items[0], items[1:engine.SpreadDepth])
	var flat []h4r.Hit
	for _, it := range items[:engine.SpreadDepth] {
		flat = append(flat, h4r.Hit{Item: it, Score: 1})
	}
	tests := []struct {
		name     string
		hits     []h4r.Hit
		spread   float64
		searched bool
	}{
		{"no gate", flat, 0, true},
		{"a clear top passes", clear, 0.25, true},
		{"a clear top under the gate", clear, 0.3, false},
		{"a flat top", flat, 0.01, false},
		{"one hit has no spread", clear[:1], 0.01, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vec := &nearVector{first: []h4r.Hit{{Item: items[0], Score: 0.9}}, near: []h4r.Hit{{Item: items[0], Score: 0.9}}}
			e := newFeedbackEngineWith(t, fixedFullText{tt.hits}, vec, engine.VectorFeedback{Docs: 3, Weight: 0.2, MinSpread: tt.spread})
			auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Text: "anything"}})
			if got := len(vec.texts) > 0; got != tt.searched {
				t.Errorf("second vector search run: %v, want %v", got, tt.searched)
			}
		})
	}
}

// An item the caller may not see must not decide whether its query vector
// moves: with the environment dump, which the healer may not see, as the
// full-text pass's clear best, the top the healer sees is flat.
func TestVectorFeedbackSpreadUsesOnlyPermittedItems(t *testing.T) {
	a := openDemo(t)
	const denied = "ci-env-dump-18342"
	dump := demoItem(t, a, denied)
	items := healerVisible(t, a, engine.SpreadDepth+1, denied)
	for _, tt := range []struct {
		name     string
		top      *h4r.Item
		searched bool
	}{
		{"a visible best", items[0], true}, // the test can fail
		{"a hidden best", dump, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vec := &nearVector{first: []h4r.Hit{{Item: items[1], Score: 0.9}}, near: []h4r.Hit{{Item: items[1], Score: 0.9}}}
			e := newFeedbackEngineWith(t, fixedFullText{flatTop(tt.top, items[1:])}, vec, engine.VectorFeedback{Docs: 3, Weight: 0.2, MinSpread: 0.1})
			auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Text: "anything"}})
			if got := len(vec.texts) > 0; got != tt.searched {
				t.Errorf("second vector search run: %v, want %v", got, tt.searched)
			}
		})
	}
}

// newFeedbackEngineWith is the production wiring with fulltext and vec as
// the text generators and feedback fb on the query vector; opts come last
// and so override it.
func newFeedbackEngineWith(t *testing.T, fulltext, vec h4r.Generator, fb engine.VectorFeedback, opts ...engine.Option) *engine.Engine {
	t.Helper()
	settings := shippedSettings(patient)
	settings.VectorFeedback = fb
	e, err := engine.New(append([]engine.Option{
		engine.WithTextGenerators(fulltext, vec),
		engine.WithSlicer(productionSlicer(t)),
		engine.WithClock(fixedClock),
		engine.WithSettings(settings),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// countingDecider counts the decisions its decider makes, by item.
type countingDecider struct {
	h4r.Decider
	mu    sync.Mutex
	count map[string]int
}

func (d *countingDecider) Decide(ctx context.Context, spec h4r.Specialist, it *h4r.Item) (h4r.Decision, error) {
	d.mu.Lock()
	d.count[it.ID]++
	d.mu.Unlock()
	return d.Decider.Decide(ctx, spec, it)
}

// newCountingDecider counts the decisions of the bundled policy.
func newCountingDecider(t *testing.T) *countingDecider {
	t.Helper()
	pol, err := policy.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &countingDecider{Decider: pol, count: map[string]int{}}
}

// countedPack builds one pack whose full-text pass has items[0] as its
// clear best over a flat rest, with vec as the vector generator, feedback
// fb, and every policy decision counted by decider.
func countedPack(t *testing.T, decider *countingDecider, vec *nearVector, fb engine.VectorFeedback, items []*h4r.Item) {
	t.Helper()
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		t.Fatal(err)
	}
	e := newFeedbackEngineWith(t, fixedFullText{flatTop(items[0], items[1:])}, vec, fb, engine.WithSlicer(scs.New(decider, counter)))
	auditPack(t, e, healer(), h4r.ContextRequest{Query: h4r.Query{Text: "anything"}})
}

// The spread gate and the pick of the best items read the same first
// pass: each item is cleared for feedback once, and once more when the
// pack is sliced.
func TestVectorFeedbackClearsEachItemOnce(t *testing.T) {
	a := openDemo(t)
	items := healerVisible(t, a, engine.SpreadDepth+1, "")
	decider := newCountingDecider(t)
	var first []h4r.Hit
	for _, it := range items {
		first = append(first, h4r.Hit{Item: it, Score: 0.9})
	}
	vec := &nearVector{first: first, near: first}
	countedPack(t, decider, vec, engine.VectorFeedback{Docs: 3, Weight: 0.2, MinSpread: 0.1}, items)
	if len(vec.texts) == 0 {
		t.Fatal("no second vector search: the test reads nothing")
	}
	for _, it := range items {
		if n := decider.count[it.ID]; n > 2 {
			t.Errorf("%s decided %d times, want at most 2 (feedback, slicing)", it.ID, n)
		}
	}
}

// The spread gate clears the full-text pass's best items a few at a time,
// as many as it still wants: when the caller sees the best SpreadDepth,
// it decides no other.
func TestVectorFeedbackSpreadClearsNoMoreThanItNeeds(t *testing.T) {
	a := openDemo(t)
	items := healerVisible(t, a, 3*engine.SpreadDepth, "")
	decisions := func(fb engine.VectorFeedback) int {
		decider := newCountingDecider(t)
		vec := &nearVector{first: []h4r.Hit{{Item: items[0], Score: 0.9}}, near: []h4r.Hit{{Item: items[0], Score: 0.9}}}
		countedPack(t, decider, vec, fb, items)
		if len(vec.texts) > 0 {
			t.Fatal("the gate let a second search run: the test reads more than the gate")
		}
		n := 0
		for _, c := range decider.count {
			n += c
		}
		return n
	}
	off := decisions(engine.VectorFeedback{})
	gated := decisions(engine.VectorFeedback{Docs: 3, Weight: 0.2, MinSpread: 10}) // no spread reaches 10
	if got := gated - off; got != engine.SpreadDepth {
		t.Errorf("the spread gate decided %d items, want %d", got, engine.SpreadDepth)
	}
}
