package linkgraph_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/h4r/h4r/index/linkgraph"
)

func reached(rs []linkgraph.Reach) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s@%d", r.ID, r.Distance)
	}
	return out
}

// chain is a → b → c, with a link from a to "ghost", no item.
func chain() *linkgraph.Graph {
	g := linkgraph.New(0)
	for _, id := range []string{"a", "b", "c"} {
		g.AddItem(id)
	}
	g.Append("a", linkgraph.Link{Target: "b", Type: "caused_by", Strength: 1})
	g.Append("a", linkgraph.Link{Target: "ghost", Type: "caused_by", Strength: 1})
	g.AppendBytes([]byte("b"), []byte("c"), []byte("fixes"), 0.5)
	return g
}

// Replace applies writes as a store does: rewritten links leave both ends,
// a deleted item is passed through no more but stays a link target, and
// an item written again links anew.
func TestReplace(t *testing.T) {
	tests := []struct {
		name    string
		present map[string]bool
		links   map[string][]linkgraph.Link
		walk    linkgraph.Walk
		want    []string
	}{
		{name: "unchanged", walk: linkgraph.Walk{Anchors: []string{"c"}, MaxHops: 3},
			want: []string{"c@0", "b@1", "a@2"}},
		{name: "links rewritten leave the old target's incoming list",
			present: map[string]bool{"b": true}, links: map[string][]linkgraph.Link{"b": nil},
			walk: linkgraph.Walk{Anchors: []string{"c"}, MaxHops: 3}, want: []string{"c@0"}},
		{name: "deleted item is passed through no more",
			present: map[string]bool{"b": false},
			walk:    linkgraph.Walk{Anchors: []string{"a"}, MaxHops: 3}, want: []string{"a@0"}},
		{name: "deleted then written again with other links",
			present: map[string]bool{"b": true}, links: map[string][]linkgraph.Link{"b": {{Target: "ghost", Type: "t"}}},
			walk: linkgraph.Walk{Anchors: []string{"a"}, MaxHops: 3}, want: []string{"a@0", "b@1"}},
		{name: "a link target becomes an item",
			present: map[string]bool{"ghost": true},
			walk:    linkgraph.Walk{Anchors: []string{"a"}, MaxHops: 1}, want: []string{"a@0", "b@1", "ghost@1"}},
		{name: "link types restrict the walk",
			walk: linkgraph.Walk{Anchors: []string{"a"}, MaxHops: 3, Types: []string{"caused_by"}}, want: []string{"a@0", "b@1"}},
		{name: "directed follows the arrows only",
			walk: linkgraph.Walk{Anchors: []string{"b"}, MaxHops: 3, Directed: true}, want: []string{"b@0", "c@1"}},
		{name: "targets report only those",
			walk: linkgraph.Walk{Anchors: []string{"a"}, MaxHops: 3, Targets: []string{"c", "ghost"}}, want: []string{"c@2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := chain()
			if tc.present != nil {
				g.Replace(tc.present, tc.links)
			}
			if got := reached(g.Walk(tc.walk)); !slices.Equal(got, tc.want) {
				t.Errorf("walk %+v: %v, want %v", tc.walk, got, tc.want)
			}
		})
	}
}

func TestLinks(t *testing.T) {
	g := chain()
	links, ok := g.Links("b")
	if !ok || len(links) != 1 || links[0].Target != "c" || links[0].Type != "fixes" || links[0].Strength != 0.5 {
		t.Errorf("links of b: %v, %v", links, ok)
	}
	if _, ok := g.Links("ghost"); ok {
		t.Error("ghost, no item, reported as an item")
	}
}

// TestWalkBeyond: on random graphs (cycles, self-links, links to no item,
// anchors repeated or unknown), WalkBeyond returns Walk's reaches less
// those at distance 0, in order, and counts those, for walks with and
// without link types, targets and Enough; for a link type no link has, it
// returns nothing.
func TestWalkBeyond(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	types := []string{"supersedes", "caused_by", "fixes"}
	for round := range 200 {
		n := 2 + rng.IntN(30)
		g := linkgraph.New(0)
		id := func(i int) string { return fmt.Sprintf("n%d", i) }
		for i := range n {
			if rng.IntN(8) != 0 { // some nodes are link targets only
				g.AddItem(id(i))
			}
		}
		linked := map[string]bool{} // the types some link has
		for range rng.IntN(3 * n) {
			typ := types[rng.IntN(len(types))]
			linked[typ] = true
			g.Append(id(rng.IntN(n)), linkgraph.Link{Target: id(rng.IntN(n + 2)), Type: typ, Strength: 1})
		}
		w := linkgraph.Walk{MaxHops: rng.IntN(4), Directed: rng.IntN(2) == 0}
		for range 1 + rng.IntN(6) {
			w.Anchors = append(w.Anchors, id(rng.IntN(n+1)))
		}
		if rng.IntN(2) == 0 {
			w.Types = []string{types[rng.IntN(len(types))]}
		}
		if rng.IntN(3) == 0 {
			for range 1 + rng.IntN(5) {
				w.Targets = append(w.Targets, id(rng.IntN(n)))
			}
		}
		if rng.IntN(2) == 0 {
			w.Enough = 1 + rng.IntN(8)
		}
		all := g.Walk(w)
		var want []linkgraph.Reach
		anchors := 0
		for _, r := range all {
			if r.Distance == 0 {
				anchors++
			} else {
				want = append(want, r)
			}
		}
		if len(w.Types) > 0 && !linked[w.Types[0]] { // nothing beyond the anchors, which are not counted
			want, anchors = nil, 0
		}
		got, gotAnchors := g.WalkBeyond(w)
		if !slices.Equal(reached(got), reached(want)) || gotAnchors != anchors {
			t.Fatalf("round %d, walk %+v:\n got %v and %d anchors\nwant %v and %d anchors", round, w, reached(got), gotAnchors, reached(want), anchors)
		}
	}
}
