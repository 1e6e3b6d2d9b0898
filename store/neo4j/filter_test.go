package neo4j_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/neo4j"
)

// countingGenerator counts the calls of the generator it wraps.
type countingGenerator struct {
	h4r.Generator
	calls atomic.Int64
}

func (c *countingGenerator) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	c.calls.Add(1)
	return c.Generator.Generate(ctx, q)
}

func ptr(v float64) *float64 { return &v }

// filterGraph is a ring of items that differ in everything a filter tests,
// all within reach of "hub".
func filterGraph() []h4r.Item {
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id, kind string, created time.Time, tags []string, extra map[string]any, next string) h4r.Item {
		return h4r.Item{ID: id, Kind: kind, Text: "item " + id,
			Metadata: h4r.Metadata{CreatedAt: created, Tags: tags, Extra: extra, Importance: ptr(0.7)},
			Links:    []h4r.Link{{Type: "caused_by", Target: next, Strength: 1}}}
	}
	return []h4r.Item{
		mk("hub", "event", day, nil, nil, "f1"),
		mk("f1", "test_failure", day.Add(24*time.Hour), []string{"selector", "login"}, map[string]any{"status": "failed", "retries": 2.0, "flaky": true}, "f2"),
		mk("f2", "test_failure", day.Add(48*time.Hour), []string{"selector"}, map[string]any{"status": "passed", "retries": 0.0, "flaky": false}, "x1"),
		mk("x1", "fix", day.Add(72*time.Hour), []string{"login"}, map[string]any{"status": "failed", "retries": "2"}, "x2"),
		mk("x2", "fix", day.Add(96*time.Hour), nil, map[string]any{"status": 1.0}, "hub"),
	}
}

// TestFiltersMatchTheStore runs the same filtered walks through Neo4j and
// through the store's CTE: the graph holds no metadata, so Go applies the
// filters to items read from the store, and must agree with the store's SQL
// on every kind of filter.
func TestFiltersMatchTheStore(t *testing.T) {
	r := newRig(t)
	r.ingest(t, filterGraph()...)
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	gen := r.generator()
	for _, tc := range []struct {
		name string
		f    h4r.Filters
		want []string // sorted ids, as a check on the case itself
	}{
		{"none", h4r.Filters{}, []string{"f1", "f2", "hub", "x1", "x2"}},
		{"one kind", h4r.Filters{Kinds: []string{"fix"}}, []string{"x1", "x2"}},
		{"two kinds", h4r.Filters{Kinds: []string{"fix", "event"}}, []string{"hub", "x1", "x2"}},
		{"one tag", h4r.Filters{Tags: []string{"login"}}, []string{"f1", "x1"}},
		{"all tags required", h4r.Filters{Tags: []string{"login", "selector"}}, []string{"f1"}},
		{"tag repeated", h4r.Filters{Tags: []string{"selector", "selector"}}, []string{"f1", "f2"}},
		{"any of two tags", h4r.Filters{AnyTags: []string{"login", "selector"}}, []string{"f1", "f2", "x1"}},
		{"any tag, one unknown", h4r.Filters{AnyTags: []string{"nope", "login"}}, []string{"f1", "x1"}},
		{"all tags and any tag", h4r.Filters{Tags: []string{"selector"}, AnyTags: []string{"login", "nope"}}, []string{"f1"}},
		{"created after is inclusive", h4r.Filters{CreatedAfter: day.Add(48 * time.Hour)}, []string{"f2", "x1", "x2"}},
		{"created before is exclusive", h4r.Filters{CreatedBefore: day.Add(48 * time.Hour)}, []string{"f1", "hub"}},
		{"created range", h4r.Filters{CreatedAfter: day.Add(24 * time.Hour), CreatedBefore: day.Add(72 * time.Hour)}, []string{"f1", "f2"}},
		{"string value", h4r.Filters{Metadata: map[string]any{"status": "failed"}}, []string{"f1", "x1"}},
		{"number value is not a string", h4r.Filters{Metadata: map[string]any{"retries": 2.0}}, []string{"f1"}},
		{"string value is not a number", h4r.Filters{Metadata: map[string]any{"retries": "2"}}, []string{"x1"}},
		{"int value", h4r.Filters{Metadata: map[string]any{"status": 1}}, []string{"x2"}},
		{"bool value", h4r.Filters{Metadata: map[string]any{"flaky": false}}, []string{"f2"}},
		{"well-known key", h4r.Filters{Metadata: map[string]any{"importance": 0.7}}, []string{"f1", "f2", "hub", "x1", "x2"}},
		{"store-maintained key", h4r.Filters{Metadata: map[string]any{"version": 1}}, []string{"f1", "f2", "hub", "x1", "x2"}},
		{"store-maintained key as a string", h4r.Filters{Metadata: map[string]any{"version": "1"}}, nil},
		{"missing key", h4r.Filters{Metadata: map[string]any{"nope": "x"}}, nil},
		{"everything at once", h4r.Filters{Kinds: []string{"test_failure"}, Tags: []string{"selector"},
			Metadata: map[string]any{"status": "failed", "flaky": true}}, []string{"f1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := h4r.CandidateQuery{Anchors: []string{"hub"}, Filters: tc.f}
			hits, err := gen.Generate(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			cte, err := r.store.Graph().Generate(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := ordered(hits), ordered(cte); !slices.Equal(got, want) {
				t.Errorf("neo4j %v, CTE %v", got, want)
			}
			ids := make([]string, 0, len(hits))
			for _, h := range hits {
				ids = append(ids, h.Item.ID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, tc.want) {
				t.Errorf("ids %v, want %v", ids, tc.want)
			}
		})
	}
}

func TestBadFiltersFailAsInTheStore(t *testing.T) {
	r := newRig(t)
	r.ingest(t, filterGraph()...)
	for _, tc := range []struct {
		name string
		f    h4r.Filters
	}{
		{"key with a quote", h4r.Filters{Metadata: map[string]any{`a"b`: "x"}}},
		{"key starting with a digit", h4r.Filters{Metadata: map[string]any{"1a": "x"}}},
		{"list value", h4r.Filters{Metadata: map[string]any{"status": []any{"a"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := h4r.CandidateQuery{Anchors: []string{"hub"}, Filters: tc.f}
			_, err := r.generator().Generate(context.Background(), q)
			_, cteErr := r.store.Graph().Generate(context.Background(), q)
			got, want := asH4R(err), asH4R(cteErr)
			if got == nil || want == nil || got.Code != want.Code || got.Field != want.Field {
				t.Errorf("neo4j error %v, CTE error %v", err, cteErr)
			}
		})
	}
}

// A filtered walk that reaches more than WithMaxReach items cannot be
// filtered completely from what Neo4j returned: the store answers, with
// no warning, since nothing failed.
func TestFilteredWalkBeyondMaxReachIsAnsweredByTheStore(t *testing.T) {
	r := newRig(t)
	r.ingest(t, filterGraph()...)
	q := h4r.CandidateQuery{Anchors: []string{"hub"}, Filters: h4r.Filters{Kinds: []string{"fix"}}}
	fallback := &countingGenerator{Generator: r.store.Graph()}
	hits, err := neo4j.NewGenerator(r.client, r.store, fallback, neo4j.WithMaxReach(2)).Generate(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if fallback.calls.Load() != 1 {
		t.Errorf("the store was asked %d times, want once", fallback.calls.Load())
	}
	cte, _ := r.store.Graph().Generate(context.Background(), q)
	if got, want := ordered(hits), ordered(cte); len(got) != 2 || !slices.Equal(got, want) {
		t.Errorf("hits %v, want the CTE's %v", got, want)
	}
	// Unfiltered, the limit is Neo4j's to apply.
	hits, err = neo4j.NewGenerator(r.client, r.store, fallback, neo4j.WithMaxReach(2)).Generate(context.Background(), h4r.CandidateQuery{Anchors: []string{"hub"}, Limit: 3})
	if err != nil || len(hits) != 3 || fallback.calls.Load() != 1 {
		t.Errorf("unfiltered walk with limit 3: %v, %v, store asked %d times", ordered(hits), err, fallback.calls.Load())
	}
}
