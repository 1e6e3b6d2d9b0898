package ann_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/vecindex"
)

// Filtered searches above the threshold do not lose recall: TopPassing
// widens the ranking, and with it the lists scanned, until enough pass, so
// the rescored top 100 of the items a filter passes shares at least 0.95
// of the exact top 100 among them, from filters nearly all items pass to
// one only a dozen pass, and none. The index scans few lists (8 of 141 per
// 200 candidates) so that the over-fetching is what keeps the recall.
func TestTopPassingKeepsRecallUnderFilters(t *testing.T) {
	const n, dim, queries = 20_000, 128, 20
	vecs := clustered(21, n+queries, dim, n/100)
	x := ann.New(ann.WithThreshold(5_000), ann.WithProbes(8))
	exact := map[string][]float32{}
	for i := range n {
		x.Put(idOf(i), vecs[i])
		exact[idOf(i)] = vecs[i]
	}
	var mu sync.RWMutex
	for _, tc := range []struct {
		name  string
		every int // an item passes when its number is a multiple
	}{
		{"all_pass", 1},
		{"half_pass", 2},
		{"a_tenth_pass", 10},
		{"one_in_a_hundred_pass", 100},
		{"a_dozen_pass", 1700},
		{"none_pass", n + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			passes := func(id string) bool {
				i, _ := strconv.Atoi(strings.TrimPrefix(id, "item-"))
				return i != 0 && i%tc.every == 0 || tc.every == 1
			}
			filtered := map[string][]float32{}
			for id, v := range exact {
				if passes(id) {
					filtered[id] = v
				}
			}
			var recall float64
			for _, q := range vecs[n:] {
				rank := ann.NewRanker(mu.RLocker(), x, q, -1)
				cands, err := ann.TopPassing(context.Background(), rank.Top, vecindex.Candidates(100), func(_ context.Context, ids []string) (map[string]bool, error) {
					ok := map[string]bool{}
					for _, id := range ids {
						ok[id] = passes(id)
					}
					return ok, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				got := vecindex.Rescore(q, cands, exact, 100, -1)
				want := exactTop(q, filtered, 100)
				for _, g := range got {
					if !passes(g.ID) {
						t.Fatalf("hit %s does not pass the filter", g.ID)
					}
				}
				if len(want) == 0 {
					if len(got) != 0 {
						t.Fatalf("%d hits where none pass", len(got))
					}
					recall++
					continue
				}
				recall += overlap(got, want)
			}
			recall /= queries
			t.Logf("%d of %d pass: recall@100 %.4f", len(filtered), n, recall)
			if recall < 0.95 {
				t.Errorf("recall@100 %.4f under the filter, want ≥ 0.95", recall)
			}
		})
	}
}
