package neo4j_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/storetest"
)

// TestHopCases runs the shared hop table (the one every store's CTE runs
// in store/storetest) through the Neo4j generator: real driver, real TCP,
// the Bolt fake. Neo4j must answer (no fallback), with the table's
// distances, in the store's order, with whole items; and the answer must
// be the CTE's, hit for hit.
func TestHopCases(t *testing.T) {
	for _, tc := range storetest.HopCases() {
		t.Run(tc.Name, func(t *testing.T) {
			r := newRig(t)
			items := tc.Items()
			r.ingest(t, items...)
			ctx := context.Background()

			hits, err := r.generator().Generate(ctx, tc.Query())
			if err != nil {
				t.Fatalf("neo4j generator: %v", err) // a FallbackError too: the CTE must not have answered
			}
			if got := distances(hits); !maps.Equal(got, tc.Want) {
				t.Errorf("distances %v, want %v", got, tc.Want)
			}
			cte, err := r.store.Graph().Generate(ctx, tc.Query())
			if err != nil {
				t.Fatal(err)
			}
			if got, want := ordered(hits), ordered(cte); !slices.Equal(got, want) {
				t.Errorf("neo4j hits %v, CTE hits %v", got, want)
			}
			links := map[string][]h4r.Link{}
			for _, it := range items {
				links[it.ID] = it.Links
			}
			for _, h := range hits {
				if !slices.Equal(h.Item.Links, links[h.Item.ID]) || h.Item.Text != "node "+h.Item.ID {
					t.Errorf("hit %s is not the stored item: %+v", h.Item.ID, h.Item)
				}
			}
		})
	}
}

// TestHopCasesAfterRebuild checks the graph a rebuild makes from the store
// walks like the one mirrored item by item.
func TestHopCasesAfterRebuild(t *testing.T) {
	for _, tc := range storetest.HopCases() {
		t.Run(tc.Name, func(t *testing.T) {
			r := newRig(t)
			ctx := context.Background()
			if _, err := r.store.Upsert(ctx, tc.Items()); err != nil {
				t.Fatal(err)
			}
			// Junk from an earlier life of the graph must go.
			if err := r.client.Upsert(ctx, []*h4r.Item{{ID: "stale", Kind: "event",
				Links: []h4r.Link{{Type: "caused_by", Target: tc.Nodes[0], Strength: 1}}}}); err != nil {
				t.Fatal(err)
			}
			n, err := r.mirror.Rebuild(ctx)
			if err != nil || n != len(tc.Nodes) {
				t.Fatalf("rebuild mirrored %d items (%v), want %d", n, err, len(tc.Nodes))
			}
			hits, err := r.generator().Generate(ctx, tc.Query())
			if err != nil {
				t.Fatal(err)
			}
			if got := distances(hits); !maps.Equal(got, tc.Want) {
				t.Errorf("distances %v, want %v", got, tc.Want)
			}
			if _, ok := r.graph.Nodes()["stale"]; ok {
				t.Error("the rebuild kept a node the store does not have")
			}
		})
	}
}

func TestGenerateRejectsWhatTheStoreRejects(t *testing.T) {
	r := newRig(t)
	r.ingest(t, h4r.Item{ID: "a", Kind: "event", Text: "a"})
	g := r.generator()
	for _, tc := range []struct {
		name  string
		q     h4r.CandidateQuery
		field string
	}{
		{"negative max hops", h4r.CandidateQuery{Anchors: []string{"a"}, MaxHops: -1}, "max_hops"},
		{"negative limit", h4r.CandidateQuery{Anchors: []string{"a"}, Limit: -1}, "limit"},
		{"max hops beyond the statement's bound", h4r.CandidateQuery{Anchors: []string{"a"}, MaxHops: 65}, "max_hops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.Generate(context.Background(), tc.q)
			var fe *h4r.FallbackError
			if err == nil || errors.As(err, &fe) {
				t.Fatalf("got %v, want an invalid_argument error", err)
			}
			if h4rErr := asH4R(err); h4rErr == nil || h4rErr.Code != "invalid_argument" || h4rErr.Field != tc.field {
				t.Errorf("got %#v, want invalid_argument on %s", err, tc.field)
			}
		})
	}
	hits, err := g.Generate(context.Background(), h4r.CandidateQuery{})
	if err != nil || hits != nil {
		t.Errorf("no anchors: got %v, %v; want nothing", hits, err)
	}
}
