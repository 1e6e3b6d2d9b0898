package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// filterCorpus returns the items the filter cases run over. Every text holds
// "alpha", so a full-text search for it finds them all unless filtered.
func filterCorpus() []h4r.Item {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	t2 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	return []h4r.Item{
		{ID: "a", Kind: "test_failure", Text: "alpha login selector failure", Metadata: h4r.Metadata{
			CreatedAt: t0, Tags: []string{"selector", "login"}, Importance: ptr(0.7), ContainsPII: true, Source: "playwright",
			Extra: map[string]any{"test_type": "e2e", "status": "failed", "retries": 3, "flaky": true, "code": "1", "test-suite": "smoke"},
		}},
		{ID: "b", Kind: "test_failure", Text: "alpha login unit failure", Metadata: h4r.Metadata{
			CreatedAt: t1, Tags: []string{"login"},
			Extra: map[string]any{"test_type": "unit", "status": "failed", "retries": 2, "flaky": false, "code": 1},
		}},
		{ID: "c", Kind: "fix", Text: "alpha selector fix", Metadata: h4r.Metadata{
			CreatedAt: t2, Tags: []string{"selector"},
			Extra: map[string]any{"test_type": "e2e", "status": "passed", "ratio": 0.25},
		}},
		{ID: "d", Kind: "note", Text: "alpha note", Metadata: h4r.Metadata{
			CreatedAt: time.Date(2026, 1, 15, 12, 0, 0, 0, time.FixedZone("EET", 2*3600)),
		}},
	}
}

func (s *suite) testFilters(t *testing.T) {
	st := s.open(t)
	corpus := filterCorpus()
	upsert(t, st, corpus...)
	upsert(t, st, corpus[1]) // b is at version 2
	all := []string{"a", "b", "c", "d"}

	t1 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		filters h4r.Filters
		want    []string
	}{
		{"none", h4r.Filters{}, all},
		{"one kind", h4r.Filters{Kinds: []string{"test_failure"}}, []string{"a", "b"}},
		{"any of two kinds", h4r.Filters{Kinds: []string{"fix", "note"}}, []string{"c", "d"}},
		{"unknown kind", h4r.Filters{Kinds: []string{"nope"}}, nil},
		{"one tag", h4r.Filters{Tags: []string{"selector"}}, []string{"a", "c"}},
		{"all tags required", h4r.Filters{Tags: []string{"selector", "login"}}, []string{"a"}},
		{"repeated tag", h4r.Filters{Tags: []string{"login", "login"}}, []string{"a", "b"}},
		{"unknown tag", h4r.Filters{Tags: []string{"selector", "nope"}}, nil},
		{"any of two tags", h4r.Filters{AnyTags: []string{"selector", "login"}}, []string{"a", "b", "c"}},
		{"any tag, one unknown", h4r.Filters{AnyTags: []string{"nope", "login"}}, []string{"a", "b"}},
		{"any tag, all unknown", h4r.Filters{AnyTags: []string{"nope"}}, nil},
		{"repeated any tag", h4r.Filters{AnyTags: []string{"selector", "selector"}}, []string{"a", "c"}},
		{"all tags and any tag", h4r.Filters{Tags: []string{"login"}, AnyTags: []string{"selector", "nope"}}, []string{"a"}},
		{"any tag and kind", h4r.Filters{Kinds: []string{"fix", "note"}, AnyTags: []string{"selector", "login"}}, []string{"c"}},
		{"created after is inclusive", h4r.Filters{CreatedAfter: t1}, []string{"b", "c"}},
		{"created before is exclusive", h4r.Filters{CreatedBefore: t1}, []string{"a", "d"}},
		{"created range", h4r.Filters{CreatedAfter: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), CreatedBefore: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}, []string{"a", "b", "d"}},
		{"created range in another zone", h4r.Filters{CreatedAfter: t1.In(time.FixedZone("CET", 3600))}, []string{"b", "c"}},
		{"item created in another zone", h4r.Filters{CreatedAfter: time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC), CreatedBefore: time.Date(2026, 1, 15, 10, 0, 1, 0, time.UTC)}, []string{"d"}},
		{"empty range", h4r.Filters{CreatedAfter: t1, CreatedBefore: t1}, nil},
		{"metadata string", h4r.Filters{Metadata: map[string]any{"test_type": "e2e"}}, []string{"a", "c"}},
		{"two metadata keys", h4r.Filters{Metadata: map[string]any{"test_type": "e2e", "status": "failed"}}, []string{"a"}},
		{"metadata integer", h4r.Filters{Metadata: map[string]any{"retries": 3.0}}, []string{"a"}},
		{"metadata fraction", h4r.Filters{Metadata: map[string]any{"ratio": 0.25}}, []string{"c"}},
		{"metadata true", h4r.Filters{Metadata: map[string]any{"flaky": true}}, []string{"a"}},
		{"metadata false", h4r.Filters{Metadata: map[string]any{"flaky": false}}, []string{"b"}},
		{"well-known boolean", h4r.Filters{Metadata: map[string]any{"containsPII": true}}, []string{"a"}},
		{"well-known false includes the default", h4r.Filters{Metadata: map[string]any{"containsPII": false}}, []string{"b", "c", "d"}},
		{"well-known number", h4r.Filters{Metadata: map[string]any{"importance": 0.7}}, []string{"a"}},
		{"well-known string", h4r.Filters{Metadata: map[string]any{"source": "playwright"}}, []string{"a"}},
		{"string does not equal number", h4r.Filters{Metadata: map[string]any{"code": "1"}}, []string{"a"}},
		{"number does not equal string", h4r.Filters{Metadata: map[string]any{"code": 1.0}}, []string{"b"}},
		{"true does not equal 1", h4r.Filters{Metadata: map[string]any{"code": true}}, nil},
		{"key with a hyphen", h4r.Filters{Metadata: map[string]any{"test-suite": "smoke"}}, []string{"a"}},
		{"missing key", h4r.Filters{Metadata: map[string]any{"nope": "x"}}, nil},
		{"store-maintained version", h4r.Filters{Metadata: map[string]any{"version": 2.0}}, []string{"b"}},
		{"everything at once", h4r.Filters{Kinds: []string{"test_failure"}, Tags: []string{"login"}, CreatedAfter: t1,
			Metadata: map[string]any{"status": "failed"}}, []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, q := range []struct {
				gen   h4r.Generator
				query h4r.CandidateQuery
			}{
				{st.FullText(), h4r.CandidateQuery{Text: "alpha", Filters: tt.filters}},
				{st.Graph(), h4r.CandidateQuery{Anchors: all, Filters: tt.filters}},
			} {
				got := hitIDs(generate(t, q.gen, q.query))
				slices.Sort(got)
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s: got %v, want %v", q.gen.Name(), got, tt.want)
				}
			}
		})
	}
}

func (s *suite) testFullTextRanking(t *testing.T) {
	st := s.open(t)
	items := []h4r.Item{
		textItem("five", "login test failures selector issues"),
		textItem("three", "login test failures noted yesterday"),
		textItem("one", "login page rendered slowly today"),
		textItem("none", "database backup completed without problems"),
	}
	// Unrelated items, so that the query words are rare enough to weigh
	// (bm25 gives words in most documents almost no weight).
	for i := range 12 {
		items = append(items, textItem(fmt.Sprintf("filler-%02d", i), "quarterly gardening report about weather and cooking"))
	}
	upsert(t, st, items...)

	tests := []struct {
		name  string
		query string
		limit int
		want  []string // the exact set of hits
		order []string // hits that must come in this order
	}{
		{"more query words rank higher", "login test failures with selector issues", 0,
			[]string{"five", "one", "three"}, []string{"five", "three", "one"}},
		{"one word is enough", "selector", 0, []string{"five"}, nil},
		{"rare words outweigh", "yesterday login", 0, []string{"five", "one", "three"}, []string{"three", "five"}},
		{"case does not matter", "LOGIN Selector", 0, []string{"five", "one", "three"}, []string{"five"}},
		{"plural finds singular", "selectors", 0, []string{"five"}, nil},
		{"singular finds plural", "issue", 0, []string{"five"}, nil},
		{"limit keeps the best", "login test failures selector issues", 2, []string{"five", "three"}, []string{"five", "three"}},
		{"no word matches", "kubernetes", 0, nil, nil},
		{"no words at all", "?! ... --", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: tt.query, Limit: tt.limit})
			got := hitIDs(hits)
			set := slices.Sorted(slices.Values(got))
			if !slices.Equal(set, tt.want) {
				t.Fatalf("hits %v, want the set %v", got, tt.want)
			}
			last := -1
			for _, id := range tt.order {
				i := slices.Index(got, id)
				if i < last {
					t.Errorf("hits %v: want %v in this order", got, tt.order)
				}
				last = i
			}
			for i, h := range hits {
				if h.Score <= 0 {
					t.Errorf("hit %s has score %v, want > 0", h.Item.ID, h.Score)
				}
				if i > 0 && h.Score > hits[i-1].Score {
					t.Errorf("hit %s (%v) scores above %s (%v) but comes after it", h.Item.ID, h.Score, hits[i-1].Item.ID, hits[i-1].Score)
				}
			}
		})
	}
	t.Run("default limit is 100", func(t *testing.T) {
		st := s.open(t)
		var many []h4r.Item
		for _, id := range ids("m", 120) {
			many = append(many, textItem(id, "common words everywhere"))
		}
		upsert(t, st, many...)
		if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "common"}); len(hits) != 100 {
			t.Errorf("got %d hits, want 100", len(hits))
		}
	})
}

// testFullTextQueryAnalysis checks what the stores share through package
// analysis: English stop words leave the query (they find nothing and weigh
// nothing), and a word asked twice counts twice (query-term frequency).
// "banana" and "cherry" are equally rare in documents of equal length, so
// only the query's counts can order them, both ways round.
func (s *suite) testFullTextQueryAnalysis(t *testing.T) {
	st := s.open(t)
	items := []h4r.Item{
		textItem("banana", "apple banana"),
		textItem("cherry", "apple cherry"),
		textItem("cats", "cats sleeping"),
		textItem("stopwords", "the the the what about it is and of"),
	}
	for i := range 12 {
		items = append(items, textItem(fmt.Sprintf("filler-%02d", i), "database backup completed without problems"))
	}
	upsert(t, st, items...)
	tests := []struct {
		name  string
		query string
		want  []string // the hits, in order
	}{
		{"stop words find nothing", "what about the and of it", nil},
		{"stop words do not bring hits", "what about the cats", []string{"cats"}},
		{"a repeated word counts twice", "banana cherry banana", []string{"banana", "cherry"}},
		{"the other word repeated", "cherry banana cherry", []string{"cherry", "banana"}},
		{"repeats count across case", "Cherry CHERRY banana", []string{"cherry", "banana"}},
		{"stop words between repeats", "the cherry of the banana and the cherry", []string{"cherry", "banana"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: tt.query})
			if got := hitIDs(hits); !slices.Equal(got, tt.want) {
				t.Fatalf("hits %v, want %v", got, tt.want)
			}
			if len(hits) == 2 && !(hits[0].Score > hits[1].Score) {
				t.Errorf("scores %v and %v: the repeated word must weigh more, not tie", hits[0].Score, hits[1].Score)
			}
		})
	}
}

func (s *suite) testFullTextSyntax(t *testing.T) {
	st := s.open(t)
	upsert(t, st, textItem("login", LoginText), textItem("other", "database backup completed"))
	for _, q := range NastyQueries() {
		t.Run(q.Name, func(t *testing.T) {
			hits, err := st.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: q.Text})
			if err != nil {
				t.Fatalf("Generate(%q): %v", q.Text, err)
			}
			if q.FindsLogin && !slices.Contains(hitIDs(hits), "login") {
				t.Errorf("Generate(%q) = %v, want the login item among the hits", q.Text, hitIDs(hits))
			}
			if slices.Contains(hitIDs(hits), "other") {
				t.Errorf("Generate(%q) found the item with none of its words", q.Text)
			}
		})
	}
}

func (s *suite) testBadQueries(t *testing.T) {
	st := s.open(t)
	upsert(t, st, textItem("a", "alpha"))
	badKey := h4r.Filters{Metadata: map[string]any{`a"b`: "x"}}
	badValue := h4r.Filters{Metadata: map[string]any{"x": []any{"list"}}}
	tests := []struct {
		name      string
		gen       h4r.Generator
		query     h4r.CandidateQuery
		wantField string
	}{
		{"full text negative limit", st.FullText(), h4r.CandidateQuery{Text: "alpha", Limit: -1}, "limit"},
		{"graph negative limit", st.Graph(), h4r.CandidateQuery{Anchors: []string{"a"}, Limit: -1}, "limit"},
		{"graph negative max hops", st.Graph(), h4r.CandidateQuery{Anchors: []string{"a"}, MaxHops: -1}, "max_hops"},
		{"full text metadata key with a quote", st.FullText(), h4r.CandidateQuery{Text: "alpha", Filters: badKey}, `filters.a"b`},
		{"graph metadata key with a quote", st.Graph(), h4r.CandidateQuery{Anchors: []string{"a"}, Filters: badKey}, `filters.a"b`},
		{"full text list filter value", st.FullText(), h4r.CandidateQuery{Text: "alpha", Filters: badValue}, "filters.x"},
		{"graph list filter value", st.Graph(), h4r.CandidateQuery{Anchors: []string{"a"}, Filters: badValue}, "filters.x"},
		{"bad filter with a query of no words", st.FullText(), h4r.CandidateQuery{Text: "?!", Filters: badKey}, `filters.a"b`},
		{"bad filter without anchors", st.Graph(), h4r.CandidateQuery{Filters: badValue}, "filters.x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.gen.Generate(t.Context(), tt.query)
			wantError(t, err, h4r.EINVALID, tt.wantField)
		})
	}
}
