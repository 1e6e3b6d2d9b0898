package cypher

import (
	"strings"
	"testing"
)

func TestHopsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		k        int
		directed bool
		pattern  string
	}{
		{"anchors only", 0, false, "-[*0..0]-(n:Item)"},
		{"default depth", 3, false, "-[*0..3]-(n:Item)"},
		{"directed", 3, true, "-[*0..3]->(n:Item)"},
		{"deepest", MaxHops, true, "-[*0..64]->(n:Item)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := Hops(tc.k, tc.directed)
			if !strings.Contains(q, tc.pattern) {
				t.Errorf("%q does not contain %q", q, tc.pattern)
			}
			k, directed, ok := ParseHops(q)
			if !ok || k != tc.k || directed != tc.directed {
				t.Errorf("ParseHops = %d, %v, %v; want %d, %v, true", k, directed, ok, tc.k, tc.directed)
			}
		})
	}
	for _, q := range []string{"", Constraint, strings.Replace(Hops(3, false), "*0..3", "*1..3", 1)} {
		if _, _, ok := ParseHops(q); ok {
			t.Errorf("ParseHops(%q) recognised a statement that is not a hop query", q)
		}
	}
}

func TestHopsRefusesDepthsOutOfRange(t *testing.T) {
	for _, k := range []int{-1, MaxHops + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Hops(%d) did not panic", k)
				}
			}()
			Hops(k, false)
		}()
	}
}

// Every value a statement uses is a parameter: no statement but the hop
// query has a formatting verb, and the hop query's only one is the bound.
func TestStatementsAreFixedText(t *testing.T) {
	for _, q := range []string{Constraint, DropLinks, MergeItems, CreateLinks, MarkDeleted, DropOrphans, ClearBatch, CountPresent} {
		if strings.Contains(q, "%") {
			t.Errorf("statement has a formatting verb: %q", q)
		}
	}
	if q := Hops(2, false); strings.Contains(q, "%") || strings.Count(Hops(7, false), "7") != 1 {
		t.Errorf("the hop query formats more than its bound: %q", q)
	}
}
