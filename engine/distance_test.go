package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/pgtest"
)

// farCandidateCorpus: "hub" is the best text match for "quartz", and links
// to 150 items that share no word with the query; the text candidate
// "far" is three hops from it (hub → p1 → p2 → far). Two other strong
// matches, unlinked, fill the default three anchors, so "far" is ranked
// fourth by text and is not an anchor itself.
func farCandidateCorpus() []h4r.Item {
	items := []h4r.Item{
		{ID: "hub", Kind: "note", Text: "quartz quartz quartz crystal lattice", Links: []h4r.Link{{Type: "caused_by", Target: "p1"}}},
		{ID: "strong-1", Kind: "note", Text: "quartz quartz crystal"},
		{ID: "strong-2", Kind: "note", Text: "quartz quartz lattice"},
		{ID: "p1", Kind: "note", Text: "an intermediate step", Links: []h4r.Link{{Type: "caused_by", Target: "p2"}}},
		{ID: "p2", Kind: "note", Text: "another intermediate step", Links: []h4r.Link{{Type: "caused_by", Target: "far"}}},
		{ID: "far", Kind: "note", Text: "a long note that mentions quartz once among many other words about unrelated geology and weather"},
	}
	for i := range 150 {
		id := fmt.Sprintf("near-%03d", i)
		items[0].Links = append(items[0].Links, h4r.Link{Type: "caused_by", Target: id})
		items = append(items, h4r.Item{ID: id, Kind: "note", Text: fmt.Sprintf("neighbour number %d of the hub", i)})
	}
	return items
}

// TestTextCandidatesGetTheirRealDistance: the hop walk from the anchors
// returns the nearest 100 items (the 150 one hop away), so before the
// engine asked the graph for the distances of its text candidates, "far"
// (three hops away) got causality 0; now it gets 1/(1+3).
func TestTextCandidatesGetTheirRealDistance(t *testing.T) {
	stores := []struct {
		name string
		cfg  func(t *testing.T) config.Config
	}{
		{"sqlite", func(t *testing.T) config.Config { return testConfig(t) }},
		{"postgres", func(t *testing.T) config.Config {
			cfg := testConfig(t)
			cfg.DatabaseURL = pgtest.Schema(t, "h4r_engine_test")
			return cfg
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			a, err := app.Open(ctx, st.cfg(t), app.WithClock(fixedClock), app.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			if _, err := a.Store.Upsert(ctx, farCandidateCorpus()); err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				name    string
				maxHops int
				anchors []string           // given by the request; empty: the top text hits
				want    map[string]float64 // causality by id
			}{
				{"three hops allowed", 3, nil, map[string]float64{"hub": 0, "far": 0.25, "near-000": 0.5}},
				{"two hops allowed: far is out of reach", 2, nil, map[string]float64{"hub": 0, "far": 0, "near-000": 0.5}},
				{"anchor given by the request", 3, []string{"hub"}, map[string]float64{"hub": 0, "far": 0.25, "near-000": 0.5}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					p := auditPack(t, a.Engine, healer(), h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryKeyword, Text: "quartz"}, MaxHops: tt.maxHops, Anchors: tt.anchors, Limit: 50})
					if p.Status != h4r.StatusOK {
						t.Fatalf("status %s, warnings %v", p.Status, p.Explainability.Warnings)
					}
					for id, want := range tt.want {
						ex, ok := explained(p, id)
						if !ok {
							t.Errorf("%s is not a candidate", id)
							continue
						}
						if got := ex.Signals[h4r.Causality]; got != want {
							t.Errorf("%s: causality %v, want %v", id, got, want)
						}
					}
				})
			}
		})
	}
}
