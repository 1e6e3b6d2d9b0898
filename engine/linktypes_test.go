package engine_test

import (
	"context"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
)

// conversationCorpus is the shape that made the shipped defaults lose on
// conversation memory: "question" is the best text match, "reply" is the
// turn after it (follows), "answer" answers it but matches the words less
// well, and "cause" is what the question was caused by.
func conversationCorpus() []h4r.Item {
	return []h4r.Item{
		{ID: "question", Kind: "turn", Text: "which database does the billing service use billing database",
			Links: []h4r.Link{{Type: "caused_by", Target: "cause"}}},
		{ID: "reply", Kind: "turn", Text: "let me check that for you", Links: []h4r.Link{{Type: "follows", Target: "question"}}},
		{ID: "answer", Kind: "turn", Text: "the billing service moved to postgres last week"},
		{ID: "cause", Kind: "turn", Text: "an outage of the old store"},
		{ID: "chunk-2", Kind: "chunk", Text: "billing database settings and pool sizes",
			Links: []h4r.Link{{Type: "follows", Target: "chunk-1"}}},
		{ID: "chunk-1", Kind: "chunk", Text: "the header of a file", Links: []h4r.Link{{Type: "contains", Target: "question"}}},
	}
}

// TestCausalHopsFollowCausalLinkTypes: hops from the top text hits follow
// only H4R_CAUSAL_LINK_TYPES unless the request names link_types, so the
// turn after a hit (follows) and a chunk's neighbours (contains, follows)
// get no causality by default. Before H4R_CAUSAL_LINK_TYPES, "reply" and
// "chunk-1" got causality 1/2, as the "all" case shows.
func TestCausalHopsFollowCausalLinkTypes(t *testing.T) {
	tests := []struct {
		name       string
		configured string   // H4R_CAUSAL_LINK_TYPES; "": the default
		linkTypes  []string // the request's link_types
		want       map[string]float64
	}{
		{"default: causal links only", "", nil, map[string]float64{"cause": 0.5, "reply": 0, "chunk-1": 0}},
		{"all: every link, as before", config.AllLinkTypes, nil, map[string]float64{"cause": 0.5, "reply": 0.5, "chunk-1": 0.5}},
		{"configured list", "follows", nil, map[string]float64{"cause": 0, "reply": 0.5, "chunk-1": 0.5}},
		{"the request's link_types win over the default", "", []string{"follows", "contains"}, map[string]float64{"cause": 0, "reply": 0.5, "chunk-1": 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(t)
			if tt.configured != "" {
				cfg.CausalLinkTypes = tt.configured
			}
			a, err := app.Open(ctx, cfg, app.WithClock(fixedClock), app.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			if _, err := a.Store.Upsert(ctx, conversationCorpus()); err != nil {
				t.Fatal(err)
			}
			p := auditPack(t, a.Engine, healer(), h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryKeyword, Text: "billing database"},
				LinkTypes: tt.linkTypes, MaxHops: 1, Limit: 50})
			if p.Status != h4r.StatusOK {
				t.Fatalf("status %s, warnings %v", p.Status, p.Explainability.Warnings)
			}
			for id, want := range tt.want {
				got := 0.0
				if ex, ok := explained(p, id); ok {
					got = ex.Signals[h4r.Causality]
				}
				if got != want {
					t.Errorf("%s: causality %v, want %v", id, got, want)
				}
			}
		})
	}
}
