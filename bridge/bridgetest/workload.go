package bridgetest

import (
	"math/rand/v2"
	"strings"
)

// Words are the problems' vocabulary.
var Words = strings.Fields(`database query index latency cache replica shard migration schema deadlock
	login session token cookie selector button form render component layout
	deploy rollout canary container kubernetes pod memory leak goroutine panic retry timeout
	throttle queue consumer producer stream batch backfill metric alert dashboard trace span`)

// Domains are the trajectories' and calls' domains.
var Domains = []string{"engineering", "frontend", "ops", "data"}

// Problem is "How to fix" and n words drawn from r.
func Problem(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = Words[r.IntN(len(Words))]
	}
	return "How to fix " + strings.Join(ws, " ")
}

// Domain is a domain drawn from r.
func Domain(r *rand.Rand) string { return Domains[r.IntN(len(Domains))] }
