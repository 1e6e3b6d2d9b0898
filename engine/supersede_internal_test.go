package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/h4r/h4r"
)

// walkGraph answers a supersedes walk with hits at distances 0 and 1 and
// counts which of its methods were asked.
type walkGraph struct{ generated, beyond int }

func (*walkGraph) Name() string { return h4r.GenGraph }

func (g *walkGraph) Generate(_ context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	g.generated++
	var hits []h4r.Hit
	for _, id := range q.Anchors {
		hits = append(hits, h4r.Hit{Item: &h4r.Item{ID: id}})
	}
	return append(hits, h4r.Hit{Item: &h4r.Item{ID: "newer"}, Distance: 1}), nil
}

// beyondGraph leaves the anchors out, as store/sqlite's graph does.
type beyondGraph struct{ walkGraph }

func (g *beyondGraph) GenerateBeyondAnchors(_ context.Context, _ h4r.CandidateQuery) ([]h4r.Hit, error) {
	g.beyond++
	return []h4r.Hit{{Item: &h4r.Item{ID: "newer"}, Distance: 1}}, nil
}

// TestSupersedingItemsLeavesTheAnchorsOut: the supersedes walk asks a
// graph that can leave the anchors out to do so, and any other graph for
// all its hits; both give the items one link away.
func TestSupersedingItemsLeavesTheAnchorsOut(t *testing.T) {
	cands := []*h4r.Candidate{{Item: &h4r.Item{ID: "a"}}, {Item: &h4r.Item{ID: "b"}}}
	ids := func(items []*h4r.Item) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.ID)
		}
		return out
	}
	plain, beyond := &walkGraph{}, &beyondGraph{}
	for _, tt := range []struct {
		name  string
		graph h4r.Generator
		calls func() (generated, beyond int)
		want  [2]int
	}{
		{"any graph", plain, func() (int, int) { return plain.generated, plain.beyond }, [2]int{1, 0}},
		{"a graph that leaves the anchors out", beyond, func() (int, int) { return beyond.generated, beyond.beyond }, [2]int{0, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &Engine{graph: tt.graph}
			got, err := e.supersedingItems(t.Context(), cands)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), []string{"newer"}) {
				t.Errorf("superseding items %v, want [newer]", ids(got))
			}
			if g, b := tt.calls(); [2]int{g, b} != tt.want {
				t.Errorf("Generate asked %d times, GenerateBeyondAnchors %d, want %v", g, b, tt.want)
			}
		})
	}
}
