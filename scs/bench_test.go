package scs

import (
	"fmt"
	"testing"

	"github.com/h4r/h4r/sources"
)

func BenchmarkSlice(b *testing.B) {
	var items []*sources.Item
	for len(items) < 100 {
		for _, it := range fixtures(b) {
			if it.ID == "bad-path" {
				continue
			}
			it.ID = fmt.Sprintf("%s-%d", it.ID, len(items))
			items = append(items, it)
		}
	}
	items = items[:100]
	engine, tok := defaultEngine(b), counter(b)
	limits := Limits{MaxBytes: 122880, MaxTokens: 30000, MaxItems: 100}
	for _, concurrency := range []int{1, 2} {
		b.Run(fmt.Sprintf("100_candidates/concurrency_%d", concurrency), func(b *testing.B) {
			slicer := New(engine, tok, WithConcurrency(concurrency))
			for b.Loop() {
				slicer.Slice(b.Context(), internalQA, items, limits)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
		})
	}
}
