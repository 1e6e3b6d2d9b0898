package bridge

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkRank10k is the lookup of a cache miss alone (no policy, no
// store): ranking 10,000 trajectories like BenchmarkEnrich10k's against a
// call and taking the best 50, on one goroutine.
func BenchmarkRank10k(b *testing.B) {
	words := strings.Fields(`database query index latency cache replica shard migration schema deadlock
	login session token cookie selector button form render component layout
	deploy rollout canary container kubernetes pod memory leak goroutine panic retry timeout
	throttle queue consumer producer stream batch backfill metric alert dashboard trace span`)
	domains := []string{"engineering", "frontend", "ops", "data"}
	problem := func(r *rand.Rand, n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return "How to fix " + strings.Join(ws, " ")
	}
	r := rand.New(rand.NewPCG(1, 2))
	x := NewIndex(nil)
	for i := range 10000 {
		it := Trajectory{ID: fmt.Sprintf("t%05d", i), Description: problem(r, 3+r.IntN(4)), Domain: domains[r.IntN(len(domains))],
			ToolSequence: []string{"think"}}.Item()
		x.Put(&it)
	}
	calls := make([]*Signature, 256)
	for i := range calls {
		calls[i] = ExtractSignature("think", map[string]any{"content": problem(r, 4), "domain": domains[r.IntN(len(domains))]}, TechExtractor{})
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		related, _, release, _ := x.rank(calls[i%len(calls)], DefaultMinSimilarity)
		takeBest(&related, 50)
		release()
	}
}
