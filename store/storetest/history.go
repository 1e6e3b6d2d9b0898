package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

// historyFinal is the corpus the history test ends with: texts of clearly
// different lengths and word counts, so that the ranking of each query is
// not a near tie that a store's rounding could flip.
func historyFinal() []h4r.Item {
	texts := []string{
		"checkout timeout timeout timeout in the payment service",
		"checkout page slow",
		"payment service crashed after the deploy of release nine",
		"timeout while waiting for the login button on the checkout page of the shop",
		"database connection pool exhausted during the nightly batch import job run",
		"flaky login test retried three times before it passed in the pipeline",
		"release nine rolled back after payment errors",
		"selector for the login button changed in the redesign",
	}
	items := make([]h4r.Item, len(texts))
	for i, text := range texts {
		items[i] = textItem(fmt.Sprintf("h-%d", i), text)
	}
	return items
}

// testHistory checks that a store's full-text statistics follow its
// writes: after replaces that change the words, deletes and re-ingests,
// every query finds and orders the items as a store loaded once with the
// final items does. (Stores that keep document counts, term frequencies
// and lengths up to date pass; one that forgot a replaced text's words
// ranks by ghosts.)
func (s *suite) testHistory(t *testing.T) {
	final := historyFinal()
	worked := s.open(t)
	// First versions with other words, then the final ones, some in a
	// batch that repeats an id.
	var first []h4r.Item
	for _, it := range final {
		first = append(first, textItem(it.ID, "obsolete wording about checkout checkout payment "+strings.Repeat("filler ", len(it.ID))))
	}
	upsert(t, worked, first...)
	for i := range 6 {
		upsert(t, worked, textItem(fmt.Sprintf("gone-%d", i), "checkout payment timeout login release selector database"))
	}
	upsert(t, worked, final[:4]...)
	upsert(t, worked, final[4], textItem(final[5].ID, "intermediate checkout text"), final[5])
	upsert(t, worked, final[6:]...)
	for i := range 6 {
		if err := worked.Delete(t.Context(), fmt.Sprintf("gone-%d", i)); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	fresh := s.open(t)
	upsert(t, fresh, final...)

	for _, query := range []string{"checkout timeout", "payment release", "login button", "obsolete filler", "database pool", "checkout"} {
		t.Run(query, func(t *testing.T) {
			want := hitIDs(generate(t, fresh.FullText(), h4r.CandidateQuery{Text: query}))
			got := hitIDs(generate(t, worked.FullText(), h4r.CandidateQuery{Text: query}))
			if !slices.Equal(got, want) {
				t.Errorf("after the history: %v; loaded once: %v", got, want)
			}
		})
	}
}

// testFilterValues checks filter values that are syntax in some store's
// query language: list and array delimiters, quotes, braces, backslashes,
// spaces.
func (s *suite) testFilterValues(t *testing.T) {
	st := s.open(t)
	odd := []string{`a,b`, `"quoted"`, `{brace}`, `back\slash`, `two words`, `it's`, `NULL`}
	var items []h4r.Item
	for i, v := range odd {
		items = append(items, h4r.Item{ID: fmt.Sprintf("v-%d", i), Kind: v, Text: "value holder",
			Metadata: h4r.Metadata{Tags: []string{v}, Extra: map[string]any{"label": v}}})
	}
	upsert(t, st, items...)
	for i, v := range odd {
		want := []string{fmt.Sprintf("v-%d", i)}
		for _, tt := range []struct {
			name    string
			filters h4r.Filters
		}{
			{"kind", h4r.Filters{Kinds: []string{v}}},
			{"tag", h4r.Filters{Tags: []string{v}}},
			{"metadata", h4r.Filters{Metadata: map[string]any{"label": v}}},
		} {
			t.Run(tt.name+" "+v, func(t *testing.T) {
				for _, gen := range []h4r.Generator{st.FullText(), st.Graph()} {
					q := h4r.CandidateQuery{Text: "value", Anchors: []string{want[0], "v-0", "v-1"}, Filters: tt.filters}
					if got := hitIDs(generate(t, gen, q)); !slices.Equal(got, want) {
						t.Errorf("%s: got %v, want %v", gen.Name(), got, want)
					}
				}
			})
		}
	}
}
