package storetest

import (
	"cmp"
	"maps"
	"slices"
	"testing"

	"github.com/h4r/h4r"
)

// Items returns the items of a hop case's graph: one per node, holding
// the links that leave it.
func (c HopCase) Items() []h4r.Item {
	items := make([]h4r.Item, 0, len(c.Nodes))
	for _, id := range c.Nodes {
		kind := c.Kinds[id]
		if kind == "" {
			kind = "event"
		}
		it := h4r.Item{ID: id, Kind: kind, Text: "node " + id}
		for _, e := range c.Edges {
			if e.From == id {
				it.Links = append(it.Links, h4r.Link{Type: "caused_by", Target: e.To, Strength: 1})
			}
		}
		for _, e := range c.TypedEdges {
			if e.From == id {
				it.Links = append(it.Links, h4r.Link{Type: e.Type, Target: e.To, Strength: 1})
			}
		}
		items = append(items, it)
	}
	return items
}

// Query returns the graph query of a hop case.
func (c HopCase) Query() h4r.CandidateQuery {
	return h4r.CandidateQuery{Anchors: c.Anchors, MaxHops: c.MaxHops, Directed: c.Directed, Filters: c.Filters, Limit: c.Limit,
		LinkTypes: c.LinkTypes, Targets: c.Targets}
}

func (s *suite) testHops(t *testing.T) {
	for _, tc := range HopCases() {
		t.Run(tc.Name, func(t *testing.T) {
			st := s.open(t)
			items := tc.Items()
			upsert(t, st, items...)
			hits := generate(t, st.Graph(), tc.Query())

			got := map[string]int{}
			for _, h := range hits {
				if _, dup := got[h.Item.ID]; dup {
					t.Errorf("%s returned twice", h.Item.ID)
				}
				got[h.Item.ID] = h.Distance
			}
			if !maps.Equal(got, tc.Want) {
				t.Errorf("distances %v, want %v", got, tc.Want)
			}
			ordered := slices.IsSortedFunc(hits, func(a, b h4r.Hit) int {
				if a.Distance != b.Distance {
					return a.Distance - b.Distance
				}
				return cmp.Compare(a.Item.ID, b.Item.ID)
			})
			if !ordered {
				t.Errorf("hits %v are not ordered by distance, then id", hitIDs(hits))
			}
			// Hits carry whole items, links included: the pack draws its
			// causal graph from them.
			byID := map[string]h4r.Item{}
			for _, it := range items {
				byID[it.ID] = it
			}
			for _, h := range hits {
				if want := byID[h.Item.ID].Links; !slices.Equal(h.Item.Links, want) {
					t.Errorf("hit %s has links %v, want %v", h.Item.ID, h.Item.Links, want)
				}
			}
		})
	}
}
