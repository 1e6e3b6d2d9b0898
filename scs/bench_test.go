package scs

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/h4r/h4r/sources"
)

// benchCandidates returns n fixture items (every policy outcome but the
// invalid path), with the sizes the store computes at ingest when stored.
func benchCandidates(b *testing.B, n int, stored bool) []*sources.Item {
	var items []*sources.Item
	for len(items) < n {
		for _, it := range fixtures(b) {
			if it.ID == "bad-path" {
				continue
			}
			it.ID = fmt.Sprintf("%s-%d", it.ID, len(items))
			if stored {
				it.Metadata.ByteSize, it.Metadata.Tokens = size(b, it)
			}
			items = append(items, it)
		}
	}
	return items[:n]
}

func BenchmarkSlice(b *testing.B) {
	engine, tok := defaultEngine(b), counter(b)
	limits := Limits{MaxBytes: 122880, MaxTokens: 30000, MaxItems: 100}
	for _, sizes := range []string{"stored_sizes", "measured_sizes"} {
		items := benchCandidates(b, 100, sizes == "stored_sizes")
		for _, concurrency := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("100_candidates/%s/concurrency_%d", sizes, concurrency), func(b *testing.B) {
				slicer := New(engine, tok, WithConcurrency(concurrency))
				for b.Loop() {
					slicer.Slice(b.Context(), internalQA, items, limits)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
			})
		}
	}
}
