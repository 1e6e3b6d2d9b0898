package bridge

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/h4r/h4r/bridge/bridgetest"
)

// BenchmarkRank10k is the lookup of a cache miss alone (no policy, no
// store): ranking 10,000 trajectories like BenchmarkEnrich10k's against a
// call and taking the best 50, on one goroutine.
func BenchmarkRank10k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := NewIndex(nil)
	for i := range 10000 {
		it := Trajectory{ID: fmt.Sprintf("t%05d", i), Description: bridgetest.Problem(r, 3+r.IntN(4)), Domain: bridgetest.Domain(r),
			ToolSequence: []string{"think"}}.Item()
		x.Put(&it)
	}
	calls := make([]*Signature, 256)
	for i := range calls {
		calls[i] = ExtractSignature("think", map[string]any{"content": bridgetest.Problem(r, 4), "domain": bridgetest.Domain(r)}, TechExtractor{})
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		related, _, release, _ := x.rank(calls[i%len(calls)], DefaultMinSimilarity)
		takeBest(&related, 50)
		release()
	}
}
