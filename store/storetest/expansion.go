package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/index/bm25"
)

// testFullTextExpansion checks pseudo-relevance feedback over the store's
// full-text generator (analysis.Feedback, as the engine runs it): the same
// expanded query and the same second-pass ranking in every store. The three
// documents that hold the query word are alike (one length, one count of
// it), so they score alike in any BM25 and weigh a third each in the
// relevance model; "garage" holds no query word and is found only through
// the added words.
func (s *suite) testFullTextExpansion(t *testing.T) {
	st := s.open(t)
	items := []h4r.Item{
		textItem("j1", "jaguar engine car speed"),
		textItem("j2", "jaguar engine car race"),
		textItem("j3", "jaguar engines cars fuel"),
		textItem("garage", "engine car garage repair"),
		textItem("other", "garden weather cooking report"),
	}
	for i := range 12 {
		items = append(items, textItem(fmt.Sprintf("filler-%02d", i), "quarterly gardening report about weather and cooking"))
	}
	upsert(t, st, items...)
	// P(w|R): jaguar, engine and car 1/4 each (engines and cars share their
	// stems), so the three are the model; λ 0.5 gives jaguar 0.5 + 0.5/3 and
	// the others 0.5/3 each: 85.3 and 21.3 of 128 occurrences, the
	// remainder to the first.
	p := analysis.Expansion{Docs: 3, Terms: 3, OriginalWeight: 0.5}
	wantTerms := []analysis.Term{{Word: "jaguar", Count: 86}, {Word: "car", Count: 21}, {Word: "engine", Count: 21}}
	q := h4r.CandidateQuery{Text: "the jaguar", Limit: 10}
	first := generate(t, st.FullText(), q)
	if got := hitIDs(first); !slices.Equal(got, []string{"j1", "j2", "j3"}) {
		t.Fatalf("first pass %v, want [j1 j2 j3] (equal scores, by id)", got)
	}
	docs := make([]analysis.FeedbackDoc, len(first))
	for i, h := range first {
		docs[i] = analysis.FeedbackDoc{Text: h.Item.Text, Score: h.Score}
	}
	a := analysis.Default()
	if got := a.Expand(q.Text, docs, nil, p, bm25.Term); !slices.Equal(got, wantTerms) {
		t.Fatalf("expanded query %v, want %v", got, wantTerms)
	}
	hits, expanded, err := a.Feedback(t.Context(), st.FullText(), q, first, p, bm25.Term, nil)
	if err != nil || !expanded {
		t.Fatalf("Feedback: expanded %v, error %v", expanded, err)
	}
	if got := hitIDs(hits); !slices.Equal(got, []string{"j1", "j2", "j3", "garage"}) {
		t.Errorf("second pass %v, want [j1 j2 j3 garage]", got)
	}

	onlyJ3 := func(items []*h4r.Item) []*h4r.Item {
		seen := make([]*h4r.Item, len(items))
		for i, it := range items {
			if it.ID == "j3" {
				seen[i] = it
			}
		}
		return seen
	}
	t.Run("the feedback documents are the top hits the caller may see", func(t *testing.T) {
		// j3 alone, though j1 and j2 rank above it: fuel joins the model,
		// and no document holds it but j3.
		hits, expanded, err := a.Feedback(t.Context(), st.FullText(), q, first, analysis.Expansion{Docs: 1, Terms: 4, OriginalWeight: 0.5}, bm25.Term, onlyJ3)
		if err != nil || !expanded {
			t.Fatalf("Feedback: expanded %v, error %v", expanded, err)
		}
		if got := hitIDs(hits); len(got) < 2 || got[0] != "j3" || !(hits[0].Score > hits[1].Score) {
			t.Errorf("second pass %v, want j3 first, alone (its words alone expand the query, fuel among them)", got)
		}
	})
	t.Run("fewer hits the caller may see than feedback documents are not expanded", func(t *testing.T) {
		hits, expanded, err := a.Feedback(t.Context(), st.FullText(), q, first, analysis.Expansion{Docs: 3, Terms: 4, OriginalWeight: 0.5}, bm25.Term, onlyJ3)
		if err != nil || expanded || !slices.Equal(hitIDs(hits), hitIDs(first)) {
			t.Errorf("Feedback = %v, expanded %v, error %v; want the first pass, unexpanded", hitIDs(hits), expanded, err)
		}
	})
	t.Run("fewer hits than feedback documents are not expanded", func(t *testing.T) {
		hits, expanded, err := a.Feedback(t.Context(), st.FullText(), q, first, analysis.Expansion{Docs: 4, Terms: 3, OriginalWeight: 0.5}, bm25.Term, nil)
		if err != nil || expanded || !slices.Equal(hitIDs(hits), hitIDs(first)) {
			t.Errorf("Feedback = %v, expanded %v, error %v; want the first pass, unexpanded", hitIDs(hits), expanded, err)
		}
	})
}
