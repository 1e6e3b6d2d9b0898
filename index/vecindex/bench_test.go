package vecindex

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkScan compares the int8 scan (scores of every vector, then the
// best 200 for rescoring) with the float32 scan it replaced (the same
// loop over float32 vectors), on n random unit vectors of 512 dimensions,
// in one run; index-MB is the memory the vectors take.
//
//	go test ./index/vecindex -run '^$' -bench Scan -count 6 | tee scan.txt
//	benchstat -col /store scan.txt
//	benchstat -col /scan scan.txt # sparse queries: the scan skipping zeros vs the dense loop
func BenchmarkScan(b *testing.B) {
	const dim = 512
	for _, n := range []int{10_000, 100_000} {
		rng := rand.New(rand.NewPCG(4, 5))
		var x Index
		ids := make([]string, n)
		flat := make([]float32, 0, n*dim)
		for i := range n {
			v := randomUnit(rng, dim)
			ids[i] = fmt.Sprintf("item-%06d", i)
			x.Put(ids[i], v)
			flat = append(flat, v...)
		}
		queries := make([][]float32, 16)
		for i := range queries {
			queries[i] = randomUnit(rng, dim)
		}
		b.Run(fmt.Sprintf("n=%dk/store=float32", n/1000), func(b *testing.B) {
			i := 0
			for b.Loop() {
				q := queries[i%len(queries)]
				scores := make([]float32, n)
				for j := range n {
					scores[j] = Dot(q, flat[j*dim:(j+1)*dim])
				}
				Top(ids, scores, Candidates(100), -1)
				i++
			}
			b.ReportMetric(float64(4*len(flat))/(1<<20), "index-MB")
		})
		sparseQueries := make([][]float32, 16)
		for i := range sparseQueries {
			sparseQueries[i] = sparseUnit(rng, dim, 50) // as the hashing embedder's 3-word queries
		}
		b.Run(fmt.Sprintf("n=%dk/store=int8/q=sparse/scan=dense", n/1000), func(b *testing.B) {
			i := 0
			d := x.dim
			for b.Loop() {
				q := sparseQueries[i%len(sparseQueries)]
				scores := make([]float32, n)
				for j := range n {
					scores[j] = DotCodes(q, x.codes[j*d:(j+1)*d]) * x.scales[j]
				}
				Top(ids, scores, Candidates(100), -1)
				i++
			}
		})
		b.Run(fmt.Sprintf("n=%dk/store=int8/q=sparse/scan=sparse", n/1000), func(b *testing.B) {
			i := 0
			for b.Loop() {
				scores, _ := x.Scores(sparseQueries[i%len(sparseQueries)])
				Top(ids, scores, Candidates(100), -1)
				i++
			}
		})
		b.Run(fmt.Sprintf("n=%dk/store=int8", n/1000), func(b *testing.B) {
			i := 0
			for b.Loop() {
				scores, _ := x.Scores(queries[i%len(queries)])
				Top(ids, scores, Candidates(100), -1)
				i++
			}
			b.ReportMetric(float64(x.Bytes())/(1<<20), "index-MB")
		})
	}
}
