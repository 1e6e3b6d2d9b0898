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

// BenchmarkDotCodes is the scoring kernel alone: a dense query (as the
// learned embedder's) against 4,096 int8 vectors in a row; ns-per-vector
// divides by them. kernel=float32 is the float32 loop (DotCodes, one call
// per vector, as centroids are scored); kernel=prepared is a prepared
// query's integer scan (ScoreCodes), by the vector unit where there is one.
//
//	go test ./index/vecindex -run '^$' -bench DotCodes -count 10
func BenchmarkDotCodes(b *testing.B) {
	const n = 4096
	for _, dim := range []int{128, 512} {
		rng := rand.New(rand.NewPCG(7, 8))
		codes := make([]int8, 0, n*dim)
		scales := make([]float32, n)
		for j := range n {
			c, s := Quantize(randomUnit(rng, dim))
			codes, scales[j] = append(codes, c...), s
		}
		q := randomUnit(rng, dim)
		b.Run(fmt.Sprintf("dim=%d/kernel=float32", dim), func(b *testing.B) {
			var sink float32
			for b.Loop() {
				for j := range n {
					sink += DotCodes(q, codes[j*dim:(j+1)*dim])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/vector")
			_ = sink
		})
		b.Run(fmt.Sprintf("dim=%d/kernel=prepared", dim), func(b *testing.B) {
			dst := make([]float32, n)
			pq := Prepare(q)
			for b.Loop() {
				pq.ScoreCodes(dst, codes, scales)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/vector")
		})
	}
}

// BenchmarkTop is the selection of the best 200 of n scores.
func BenchmarkTop(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		rng := rand.New(rand.NewPCG(9, 10))
		ids := make([]string, n)
		scores := make([]float32, n)
		for i := range n {
			ids[i] = fmt.Sprintf("item-%06d", i)
			scores[i] = float32(rng.NormFloat64() * 0.1)
		}
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Top(ids, scores, Candidates(100), -1)
			}
		})
	}
}

// BenchmarkDot is the float32 dot product rescoring computes for each
// candidate: Dot (the vector unit where there is one) against the plain
// loop it replaced there and against its own order of summation by plain
// arithmetic (what a machine without AVX2 runs), in the same run.
//
//	go test ./index/vecindex -run '^$' -bench 'Dot$' -count 10
func BenchmarkDot(b *testing.B) {
	const n = 200 // a search's candidates (Candidates(100))
	for _, dim := range []int{128, 384} {
		rng := rand.New(rand.NewPCG(5, 6))
		vecs := make([][]float32, n)
		for j := range vecs {
			vecs[j] = randomUnit(rng, dim)
		}
		q := randomUnit(rng, dim)
		for _, k := range []struct {
			name string
			dot  func(a, b []float32) float32
		}{{"plain", dotPlain}, {"lanes", dotDefinition}, {"dot", Dot}} {
			b.Run(fmt.Sprintf("dim=%d/kernel=%s", dim, k.name), func(b *testing.B) {
				var sink float32
				for b.Loop() {
					for _, v := range vecs {
						sink += k.dot(q, v)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/vector")
				_ = sink
			})
		}
	}
}
