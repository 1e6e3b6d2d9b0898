package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/h4r/h4r"
)

// randomGraph returns the items of a random graph with ids prefix-0…: up
// to 30 items of two kinds, each holding up to five links of three types
// to other items, itself, or ids that are never ingested; cycles and
// parallel links come by chance.
func randomGraph(rng *rand.Rand, prefix string) []h4r.Item {
	n := 1 + rng.IntN(30)
	items := make([]h4r.Item, n)
	for i := range items {
		items[i] = h4r.Item{ID: fmt.Sprintf("%s-%d", prefix, i), Kind: pick(rng, "event", "fix"), Text: "node"}
		items[i].Links = randomLinks(rng, prefix, n)
	}
	return items
}

func randomLinks(rng *rand.Rand, prefix string, n int) []h4r.Link {
	links := make([]h4r.Link, rng.IntN(6))
	for j := range links {
		target := fmt.Sprintf("%s-%d", prefix, rng.IntN(n))
		if rng.IntN(8) == 0 {
			target = fmt.Sprintf("%s-ghost-%d", prefix, rng.IntN(3))
		}
		links[j] = h4r.Link{Type: pick(rng, "caused_by", "fixes", "relates"), Target: target, Strength: 1}
	}
	return links
}

func pick(rng *rand.Rand, options ...string) string { return options[rng.IntN(len(options))] }

// randomIDs picks up to max ids among prefix-0…n-1 and a ghost, with
// repeats.
func randomIDs(rng *rand.Rand, prefix string, n, max int) []string {
	ids := make([]string, rng.IntN(max+1))
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, rng.IntN(n))
		if rng.IntN(10) == 0 {
			ids[i] = prefix + "-ghost-0"
		}
	}
	return ids
}

// randomHopQuery returns a graph query over a random graph of n items.
func randomHopQuery(rng *rand.Rand, prefix string, n int) h4r.CandidateQuery {
	q := h4r.CandidateQuery{
		Anchors:  randomIDs(rng, prefix, n, 3),
		MaxHops:  rng.IntN(6),
		Directed: rng.IntN(2) == 0,
	}
	if len(q.Anchors) == 0 {
		q.Anchors = []string{prefix + "-0"}
	}
	if rng.IntN(3) == 0 {
		q.Limit = 1 + rng.IntN(8)
	}
	if rng.IntN(3) == 0 {
		q.Filters = h4r.Filters{Kinds: []string{pick(rng, "event", "fix")}}
	}
	if rng.IntN(3) == 0 {
		q.LinkTypes = []string{pick(rng, "caused_by", "fixes", "relates", "unknown")}
		if rng.IntN(2) == 0 {
			q.LinkTypes = append(q.LinkTypes, pick(rng, "caused_by", "fixes"))
		}
	}
	if rng.IntN(3) == 0 {
		q.Targets = randomIDs(rng, prefix, n, 6)
	}
	return q
}

// CompareHops checks, on random graphs, that a store's graph generator
// answers every query as reference does (the recursive query a store
// replaced by a faster walk), hit for hit and in order: after ingest, and
// again after random items were rewritten with new links or deleted, so
// that a walk over a graph kept in memory is checked against the file.
// Each graph has its own id prefix, so one store serves every round.
func CompareHops(t *testing.T, st Store, reference h4r.Generator, seed uint64, rounds int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	ctx := t.Context()
	compare := func(prefix string, n int, stage string) {
		t.Helper()
		for range 8 {
			q := randomHopQuery(rng, prefix, n)
			got, err := st.Graph().Generate(ctx, q)
			if err != nil {
				t.Fatalf("%s, %s: %+v: %v", prefix, stage, q, err)
			}
			want, err := reference.Generate(ctx, q)
			if err != nil {
				t.Fatalf("%s, %s: reference %+v: %v", prefix, stage, q, err)
			}
			if g, w := hopList(got), hopList(want); !slices.Equal(g, w) {
				t.Fatalf("seed %d, %s, %s: query %+v\n got %v\nwant %v", seed, prefix, stage, q, g, w)
			}
		}
	}
	for round := range rounds {
		prefix := fmt.Sprintf("r%d", round)
		items := randomGraph(rng, prefix)
		upsert(t, st, items...)
		compare(prefix, len(items), "after ingest")

		var rewrites []h4r.Item
		for _, it := range items {
			switch rng.IntN(5) {
			case 0:
				it.Links = randomLinks(rng, prefix, len(items))
				rewrites = append(rewrites, it)
			case 1:
				if err := st.Delete(ctx, it.ID); err != nil {
					t.Fatalf("deleting %s: %v", it.ID, err)
				}
			case 2: // deleted, then back with other links
				if err := st.Delete(ctx, it.ID); err != nil {
					t.Fatalf("deleting %s: %v", it.ID, err)
				}
				it.Links = randomLinks(rng, prefix, len(items))
				rewrites = append(rewrites, it)
			}
		}
		if len(rewrites) > 0 {
			upsert(t, st, rewrites...)
		}
		compare(prefix, len(items), "after rewrites and deletes")
	}
}

// hopList is hits as "id@distance", in order.
func hopList(hits []h4r.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s@%d", h.Item.ID, h.Distance)
	}
	return out
}
