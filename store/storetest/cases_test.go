package storetest

import (
	"slices"
	"testing"
)

// The case tables are data other stores rely on; these checks keep them
// consistent when someone adds a case.
func TestHopCasesAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, c := range HopCases() {
		t.Run(c.Name, func(t *testing.T) {
			if names[c.Name] {
				t.Errorf("name used twice")
			}
			names[c.Name] = true
			for _, e := range c.Edges {
				if !slices.Contains(c.Nodes, e.From) {
					t.Errorf("edge %s→%s starts at an item not in Nodes: links are held by their source", e.From, e.To)
				}
			}
			for _, e := range c.TypedEdges {
				if !slices.Contains(c.Nodes, e.From) || e.Type == "" {
					t.Errorf("typed edge %s→%s (%q) starts at an item not in Nodes, or has no type", e.From, e.To, e.Type)
				}
			}
			for id, d := range c.Want {
				if !slices.Contains(c.Nodes, id) {
					t.Errorf("want %s, which is not an item", id)
				}
				if len(c.Targets) > 0 && !slices.Contains(c.Targets, id) {
					t.Errorf("want %s, which is not a target", id)
				}
				if d < 0 || (c.MaxHops > 0 && d > c.MaxHops) || (c.MaxHops == 0 && d > 3) {
					t.Errorf("want %s at distance %d, outside the hop bound", id, d)
				}
				if (d == 0) != slices.Contains(c.Anchors, id) {
					t.Errorf("%s at distance %d: distance 0 is for anchors only", id, d)
				}
			}
			if c.Limit > 0 && len(c.Want) > c.Limit {
				t.Errorf("want %d items with limit %d", len(c.Want), c.Limit)
			}
			items := c.Items()
			if len(items) != len(c.Nodes) {
				t.Errorf("Items() made %d items for %d nodes", len(items), len(c.Nodes))
			}
			links := 0
			for _, it := range items {
				links += len(it.Links)
				if err := it.Validate("item"); err != nil {
					t.Errorf("item %s is invalid: %v", it.ID, err)
				}
			}
			if links != len(c.Edges)+len(c.TypedEdges) {
				t.Errorf("Items() made %d links for %d edges", links, len(c.Edges)+len(c.TypedEdges))
			}
		})
	}
}

func TestNastyQueriesAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, q := range NastyQueries() {
		if names[q.Name] {
			t.Errorf("name %q used twice", q.Name)
		}
		names[q.Name] = true
	}
	if len(names) < 20 {
		t.Errorf("only %d nasty queries", len(names))
	}
}
