package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/store/sqlite"
)

// BenchmarkVectorSearch compares, on one store of n generated items (Zipf
// vocabulary, 12 to 60 words), the exact vector search (512-dimension
// hashing embedder, in-memory scan, items read for the top 100) with
// full-text search over the same items and queries: the baseline of the
// same run. The first search loads the vectors from the file; its time is
// reported as load-ms and is not in ns/op.
//
//	go test ./store/sqlite -run '^$' -bench VectorSearch -benchtime 2s -count 3 | tee vec.txt
//	benchstat -col /search vec.txt
func BenchmarkVectorSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			c := newCorpus(7)
			e := hashEmbedder(b)
			s := openAt(b, filepath.Join(b.TempDir(), "h4r.db"), sqlite.WithVectors(e))
			items := c.items("item", n, false)
			for start := 0; start < len(items); start += 1000 {
				if _, err := s.Upsert(b.Context(), items[start:min(start+1000, len(items))]); err != nil {
					b.Fatal(err)
				}
			}
			queries := make([]string, 64)
			vecs := make([][]float32, len(queries))
			for i := range queries {
				queries[i] = c.words(3 + c.rng.IntN(4))
				vecs[i] = e.Vector(queries[i])
			}
			t0 := time.Now()
			if _, err := s.SearchVectors(b.Context(), e.Model(), vecs[0], h4r.Filters{}, 100, embed.DefaultMinScore); err != nil {
				b.Fatal(err)
			}
			load := time.Since(t0)
			for _, bc := range []struct {
				name string
				run  func(i int) (int, error)
			}{
				{"search=fulltext", func(i int) (int, error) {
					h, err := s.FullText().Generate(b.Context(), h4r.CandidateQuery{Text: queries[i%len(queries)]})
					return len(h), err
				}},
				{"search=vector", func(i int) (int, error) {
					h, err := s.SearchVectors(b.Context(), e.Model(), vecs[i%len(vecs)], h4r.Filters{}, 100, embed.DefaultMinScore)
					return len(h), err
				}},
				{"search=fulltext_filtered", func(i int) (int, error) {
					h, err := s.FullText().Generate(b.Context(), h4r.CandidateQuery{Text: queries[i%len(queries)], Filters: filtersKindStatus()})
					return len(h), err
				}},
				{"search=vector_filtered", func(i int) (int, error) {
					h, err := s.SearchVectors(b.Context(), e.Model(), vecs[i%len(vecs)], filtersKindStatus(), 100, embed.DefaultMinScore)
					return len(h), err
				}},
			} {
				b.Run(bc.name, func(b *testing.B) {
					hits, i := 0, 0
					for b.Loop() {
						n, err := bc.run(i)
						if err != nil {
							b.Fatal(err)
						}
						hits += n
						i++
					}
					b.ReportMetric(float64(hits)/float64(i), "hits/op")
					b.ReportMetric(float64(load.Milliseconds()), "load-ms")
				})
			}
		})
	}
}
