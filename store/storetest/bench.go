package storetest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/cputime"
)

// LinkedItems returns n items g-0000000… with short texts, each holding k
// caused_by links to items picked uniformly at random (itself and repeats
// included), for benchmarks of hops on a large graph.
func LinkedItems(n, k int, seed uint64) []h4r.Item {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	items := make([]h4r.Item, n)
	for i := range items {
		it := h4r.Item{ID: fmt.Sprintf("g-%07d", i), Kind: "event", Text: fmt.Sprintf("node %d", i)}
		for range k {
			it.Links = append(it.Links, h4r.Link{Type: "caused_by", Target: fmt.Sprintf("g-%07d", rng.IntN(n)), Strength: 1})
		}
		items[i] = it
	}
	return items
}

// RandomAnchors returns q lists of m anchors among the ids of
// LinkedItems(n, …).
func RandomAnchors(n, q, m int, seed uint64) [][]string {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]string, q)
	for i := range out {
		for range m {
			out[i] = append(out[i], fmt.Sprintf("g-%07d", rng.IntN(n)))
		}
	}
	return out
}

// TextAnchors returns the anchors the engine would take for each query
// text: the ids of the top m full-text hits of limit (the engine asks for
// its candidate limit, 100, and anchors on the top 3), and all the hits,
// for queries that ask for their distances (Query.Targets).
func TextAnchors(ctx context.Context, fulltext h4r.Generator, texts []string, limit, m int) (anchors, hits [][]string, err error) {
	for _, text := range texts {
		found, err := fulltext.Generate(ctx, h4r.CandidateQuery{Text: text, Limit: limit})
		if err != nil {
			return nil, nil, fmt.Errorf("full-text search for anchors: %w", err)
		}
		ids := make([]string, len(found))
		for i, h := range found {
			ids[i] = h.Item.ID
		}
		anchors = append(anchors, ids[:min(m, len(ids))])
		hits = append(hits, ids)
	}
	return anchors, hits, nil
}

// BenchHops measures graph generators on the same queries, one pass over
// every query per iteration, after checking that all of them answer every
// query alike (hit for hit, in order). It reports each query's latency
// percentiles (p50-ms, p95-ms) and the hits per query. impls maps a
// sub-benchmark name (e.g. "impl=walk") to its generator.
func BenchHops(b *testing.B, impls map[string]h4r.Generator, queries []h4r.CandidateQuery) {
	b.Helper()
	names := slices.Sorted(maps.Keys(impls))
	hits := 0
	for i, q := range queries {
		var first []string
		for j, name := range names {
			got, err := impls[name].Generate(b.Context(), q)
			if err != nil {
				b.Fatalf("%s, query %d: %v", name, i, err)
			}
			list := hopList(got)
			if j == 0 {
				first, hits = list, hits+len(list)
			} else if !slices.Equal(list, first) {
				b.Fatalf("query %d (%+v): %s answers %v, %s answers %v", i, q, names[0], first, name, list)
			}
		}
	}
	for _, name := range names {
		g := impls[name]
		b.Run(name, func(b *testing.B) {
			var lat []time.Duration
			cpu := cputime.Process()
			for b.Loop() {
				for _, q := range queries {
					start := time.Now()
					if _, err := g.Generate(b.Context(), q); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
			}
			cpu = cputime.Process() - cpu
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			b.ReportMetric(float64(hits)/float64(len(queries)), "hits/query")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/query")
		})
	}
}
