package neo4j_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/neo4j"
	"github.com/h4r/h4r/store/neo4j/bolttest"
)

// The link types a walk follows are those configured (WithLinkTypes) and
// those a query asks for, both: in Neo4j and in the store's fallback alike.
func TestLinkTypesConfiguredAndAsked(t *testing.T) {
	items := []h4r.Item{
		{ID: "a", Kind: "event", Text: "a", Links: []h4r.Link{{Type: "caused_by", Target: "b"}, {Type: "fixes", Target: "c"}, {Type: "fixes", Target: "d"}}},
		{ID: "b", Kind: "event", Text: "b"},
		{ID: "c", Kind: "event", Text: "c", Links: []h4r.Link{{Type: "caused_by", Target: "d"}}},
		{ID: "d", Kind: "event", Text: "d"},
	}
	for _, tc := range []struct {
		name       string
		configured []string
		asked      []string
		want       map[string]int
	}{
		{"configured only", []string{"caused_by"}, nil, map[string]int{"a": 0, "b": 1}},
		{"asked only", nil, []string{"fixes"}, map[string]int{"a": 0, "c": 1, "d": 1}},
		{"asked within configured", []string{"caused_by", "fixes"}, []string{"fixes"}, map[string]int{"a": 0, "c": 1, "d": 1}},
		{"asked outside configured follows nothing", []string{"caused_by"}, []string{"fixes"}, map[string]int{"a": 0}},
		{"neither", nil, nil, map[string]int{"a": 0, "b": 1, "c": 1, "d": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, neo4j.WithMaxRetryTime(0))
			r.ingest(t, items...)
			opts := []neo4j.Option{neo4j.WithLinkTypes(tc.configured...)}
			q := h4r.CandidateQuery{Anchors: []string{"a"}, LinkTypes: tc.asked}
			hits, err := r.generator(opts...).Generate(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if got := distances(hits); !maps.Equal(got, tc.want) {
				t.Errorf("neo4j: distances %v, want %v", got, tc.want)
			}
			r.graph.FailAll(&bolttest.Failure{Code: "Neo.DatabaseError.General.UnknownError", Message: "disk full"})
			hits, err = r.generator(opts...).Generate(context.Background(), q)
			var fe *h4r.FallbackError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want the fallback's answer", err)
			}
			if got := distances(hits); !maps.Equal(got, tc.want) {
				t.Errorf("fallback: distances %v, want %v", got, tc.want)
			}
		})
	}
}
