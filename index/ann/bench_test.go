package ann_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r/internal/cputime"

	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/vecindex"
)

// benchSizes are the corpus sizes of BenchmarkSearch: 100k, or the list in
// H4R_ANN_BENCH_SIZES (e.g. 100000,1000000).
func benchSizes(b *testing.B) []int {
	env := os.Getenv("H4R_ANN_BENCH_SIZES")
	if env == "" {
		return []int{100_000}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("H4R_ANN_BENCH_SIZES: %q is not a positive size", f)
		}
		out = append(out, n)
	}
	return out
}

func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// exactTops streams the corpus once and returns the exact float32 top k
// of every query (ground truth without holding a million float32 vectors).
func exactTops(c *corpus, n int, queries [][]float32, k int) [][]vecindex.Scored {
	ids := make([]string, n)
	scores := make([][]float32, len(queries))
	for qi := range queries {
		scores[qi] = make([]float32, n)
	}
	for i := range n {
		ids[i] = idOf(i)
		v := c.vector(i)
		for qi, q := range queries {
			scores[qi][i] = vecindex.Dot(q, v)
		}
	}
	out := make([][]vecindex.Scored, len(queries))
	for qi := range queries {
		out[qi] = vecindex.Top(ids, scores[qi], k, -2)
	}
	return out
}

// BenchmarkSearch measures, on one clustered corpus of 512 dimensions, the
// exact int8 scan (store=exact: vecindex.Index, what the stores use below
// the threshold) against the inverted file (store=ivf, for several probe
// counts): time per search of the best 200 candidates, recall@100 after
// exact rescoring against the exact float32 top 100, the share of vectors
// scanned, and for each index its build CPU time (vectors made and
// quantised included: the exact index's build is that alone) and the heap
// it holds (ids included). The first ivf row is at the probes the index
// calibrated itself; the others at fixed probes.
//
//	nice go test ./index/ann -run '^$' -bench Search -benchtime 40x -timeout 120m | tee search.txt
//	H4R_ANN_BENCH_SIZES=1000000 … (the same, at a million)
func BenchmarkSearch(b *testing.B) {
	const dim, queries, limit = 512, 40, 100
	want := vecindex.Candidates(limit)
	for _, n := range benchSizes(b) {
		c := newCorpus(11, dim, max(10, n/100))
		qs := make([][]float32, queries)
		for i := range qs {
			qs[i] = c.vector(n + i)
		}
		truth := exactTops(c, n, qs, limit)
		recallOf := func(search func(q []float32) []vecindex.Scored) float64 {
			var recall float64
			for qi, q := range qs {
				cands := search(q)
				exact := map[string][]float32{}
				for _, cd := range cands {
					i, _ := strconv.Atoi(strings.TrimPrefix(cd.ID, "item-"))
					exact[cd.ID] = c.vector(i)
				}
				recall += overlap(vecindex.Rescore(q, cands, exact, limit, -1), truth[qi])
			}
			return recall / queries
		}
		run := func(name string, build, mem float64, search func(q []float32) []vecindex.Scored, scanned func(q []float32) int) {
			recall := recallOf(search)
			var share float64
			for _, q := range qs {
				share += float64(scanned(q)) / float64(n)
			}
			b.Run(fmt.Sprintf("n=%dk/%s", n/1000, name), func(b *testing.B) {
				i := 0
				for b.Loop() {
					search(qs[i%len(qs)])
					i++
				}
				b.ReportMetric(recall, "recall@100")
				b.ReportMetric(100*share/queries, "scanned-%")
				b.ReportMetric(build, "build-cpu-s")
				b.ReportMetric(mem, "heap-MB")
			})
		}

		before, cpu := heapBytes(), cputime.Process().Seconds()
		var ex vecindex.Index
		for i := range n {
			ex.Put(idOf(i), c.vector(i))
		}
		build, mem := cputime.Process().Seconds()-cpu, float64(heapBytes()-before)/(1<<20)
		run("store=exact", build, mem, func(q []float32) []vecindex.Scored {
			s, slack := ex.Scores(q)
			return vecindex.Top(ex.IDs(), s, want, -1-slack)
		}, func([]float32) int { return n })
		ex.Reset()
		ex = vecindex.Index{}

		before, cpu = heapBytes(), cputime.Process().Seconds()
		x := ann.New()
		for i := range n {
			x.Put(idOf(i), c.vector(i))
		}
		build, mem = cputime.Process().Seconds()-cpu, float64(heapBytes()-before)/(1<<20)
		calibrated := x.Probes()
		for _, probes := range []int{calibrated, 16, 32, 48, 64, 96} {
			name := fmt.Sprintf("store=ivf/probes=%d", probes)
			if probes == calibrated {
				name = fmt.Sprintf("store=ivf/probes=calibrated-%d", probes)
			}
			x.SetProbes(probes)
			run(name, build, mem, func(q []float32) []vecindex.Scored {
				return rankTop(x, q, want)
			}, func(q []float32) int {
				ids, _, _, _ := x.Search(q, want)
				return len(ids)
			})
		}
		runtime.KeepAlive(x)
	}
}

// rankTop is a store's search: a Ranker's best n candidates (minimum
// score -1), its score buffer handed back for the next.
func rankTop(x *ann.Index, q []float32, n int) []vecindex.Scored {
	var mu sync.Mutex
	r := ann.NewRanker(&mu, x, q, -1)
	defer r.Release()
	top, _ := r.Top(n)
	return top
}

// gaussianIndex is an exact index (no clustering) of n vectors of dim
// standard normal components drawn from rng.
func gaussianIndex(rng *rand.Rand, n, dim int) *ann.Index {
	x := ann.New(ann.WithThreshold(0))
	v := make([]float32, dim)
	for i := range n {
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		x.Put(idOf(i), v)
	}
	return x
}

// BenchmarkExactScan is the scan the stores run by default (no clustering):
// vectors of 512 dimensions (100k, or H4R_ANN_BENCH_SIZES) and a sparse
// query (a tenth nonzero, as the built-in embedder's), the codes read
// chunk by chunk, and the best 200 taken by a Ranker, as a store does.
//
//	go test ./index/ann -run '^$' -bench ExactScan -count 6
func BenchmarkExactScan(b *testing.B) {
	const dim = 512
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(5, 6))
			x := gaussianIndex(rng, n, dim)
			q := make([]float32, dim)
			for j := 0; j < dim; j += 10 {
				q[j] = float32(rng.NormFloat64())
			}
			b.ResetTimer()
			for b.Loop() {
				rankTop(x, q, 200)
			}
		})
	}
}

// BenchmarkDenseScan is the whole exact scan of a store's vector search
// with the default (learned) embedder's dense queries: a Ranker's best 200
// candidates below the threshold, as a store asks for them, on n random
// vectors of 128 and 512 dimensions; ns/vector divides by n.
//
//	go test ./index/ann -run '^$' -bench DenseScan -benchmem -count 10
func BenchmarkDenseScan(b *testing.B) {
	for _, dim := range []int{128, 512} {
		for _, n := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("dim=%d/n=%dk", dim, n/1000), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(11, 12))
				x := gaussianIndex(rng, n, dim)
				queries := make([][]float32, 16)
				for i := range queries {
					queries[i] = make([]float32, dim)
					for j := range queries[i] {
						queries[i][j] = float32(rng.NormFloat64())
					}
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					rankTop(x, queries[i%len(queries)], 200)
					i++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/vector")
			})
		}
	}
}
