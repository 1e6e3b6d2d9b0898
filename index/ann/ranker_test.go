package ann_test

import (
	"context"
	"runtime"
	"slices"
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

// A released ranker's score buffer serves the next ranker's scan: the
// rankings are the same as a fresh search's, exact and approximate,
// however rankers interleave with writes, and the scans stop allocating
// their scores (a million vectors' are 4 MB a search).
func TestRankerReusesReleasedScores(t *testing.T) {
	const n, dim = 30_000, 32
	vecs := clustered(31, n+40, dim, 100)
	for _, tc := range []struct {
		name string
		x    *ann.Index
	}{
		{"exact_scan", ann.New(ann.WithThreshold(0))},
		{"lists", ann.New(ann.WithThreshold(5_000), ann.WithProbes(4))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.RWMutex
			for i := range n {
				tc.x.Put(idOf(i), vecs[i])
			}
			fresh := func(q []float32, k int) []vecindex.Scored {
				ids, scores, slack, _ := tc.x.Search(q, k)
				return vecindex.Top(ids, scores, k, -1-slack)
			}
			for qi := range 40 {
				q := vecs[n+qi]
				if qi == 20 { // a write between rankers: their scans must see it
					tc.x.Put(idOf(n+qi), q)
				}
				r := ann.NewRanker(mu.RLocker(), tc.x, q, -1)
				for _, k := range []int{10, 200, 10} { // the last one from the kept exact scan when there is one
					got, _ := r.Top(k)
					if want := fresh(q, k); !slices.Equal(got, want) {
						t.Fatalf("query %d, top %d: %v…, a fresh search gives %v…", qi, k, got[:min(3, len(got))], want[:min(3, len(want))])
					}
				}
				r.Release()
			}
			if raceEnabled {
				// The race detector's sync.Pool drops a share of what is put
				// back on purpose; .ci/run runs this test without -race too.
				return
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const searches = 20
			for qi := range searches {
				r := ann.NewRanker(mu.RLocker(), tc.x, vecs[n+qi], -1)
				r.Top(10)
				r.Release()
			}
			runtime.ReadMemStats(&after)
			// Unreused, the scores alone would be at least searches × 4 bytes
			// × the vectors scanned (n on the exact scan).
			if tc.name == "exact_scan" {
				if got, unreused := after.TotalAlloc-before.TotalAlloc, uint64(searches*4*n); got > unreused/4 {
					t.Errorf("%d searches allocated %d bytes; unreused score buffers alone take %d", searches, got, unreused)
				}
			}
		})
	}
}
