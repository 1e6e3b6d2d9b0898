package h4r

import (
	"context"
	"fmt"
)

// Generator names. A candidate's evidence is keyed by them and they appear
// in a pack's "sources".
const (
	GenFullText = "fulltext"
	GenVector   = "vector"
	GenGraph    = "graph"
)

// DefaultMaxHops bounds causal hops when neither the request nor the
// configuration says otherwise.
const DefaultMaxHops = 3

// CandidateQuery is what a generator is asked. Text generators use Text;
// the graph generator uses Anchors, MaxHops, Directed, LinkTypes and
// Targets. Every generator applies Filters, so that a filtered-out item
// never becomes a candidate.
type CandidateQuery struct {
	Text     string
	Filters  Filters
	Limit    int // at most this many hits; 0 means the generator's default
	Anchors  []string
	MaxHops  int
	Directed bool // follow links only from source to target
	// LinkTypes, when not empty, makes the walk follow only links of these
	// types (both ways unless Directed).
	LinkTypes []string
	// Targets, when not empty, asks the graph generator for the distances
	// of these items only: it returns those of them within MaxHops of the
	// anchors (an anchor at 0), and no other item, so that candidates found
	// by other generators get their real distance however many items lie
	// nearer. With Targets, Limit 0 means no limit beyond the targets.
	Targets []string
}

// Hit is one item a generator found, with its raw evidence: Score for text
// and vector generators (higher is better, not normalised), Distance for
// the graph generator (hops from the nearest anchor, 0 for an anchor).
type Hit struct {
	Item     *Item
	Score    float64
	Distance int
}

// Generator finds candidate items for a query. Implementations must be safe
// for concurrent use and must respect ctx's deadline.
type Generator interface {
	Name() string
	Generate(ctx context.Context, q CandidateQuery) ([]Hit, error)
}

// Evidence is what one generator said about a candidate.
type Evidence struct {
	Generator string
	Score     float64 // raw generator score (text, vector)
	Rank      int     // 1-based rank within that generator's hits
	Distance  int     // hops from the anchors (graph)
}

// Candidate is an item found by one or more generators, merged by id.
type Candidate struct {
	Item     *Item
	Evidence []Evidence
	// SupersededBy is the id of a newer item the caller may see that
	// supersedes this one (empty: none), set by the engine before ranking.
	// SupersessionProposed says the engine inferred it (same kind, groups
	// and subject) rather than a writer linking it.
	SupersededBy         string
	SupersessionProposed bool
}

// Find returns the evidence of the named generator.
func (c *Candidate) Find(generator string) (Evidence, bool) {
	for _, e := range c.Evidence {
		if e.Generator == generator {
			return e, true
		}
	}
	return Evidence{}, false
}

// Merge folds each generator's hits into candidates keyed by item id,
// keeping the first-seen order. hits maps a generator name to its hits in
// rank order.
func Merge(order []string, hits map[string][]Hit) []*Candidate {
	n := 0
	for _, gen := range order {
		n += len(hits[gen])
	}
	if n == 0 {
		return nil
	}
	// Two passes over the hits: the first numbers the candidates and counts
	// each one's evidence, the second writes the evidence into one array
	// sized for it, each candidate's in a region of its own whose capacity
	// ends there, so that appending to it never reaches another's. Room for
	// every generator in every candidate instead was as many times the
	// evidence as there are generators, and a pack's largest allocation.
	byID := make(map[string]int32, n)
	of := make([]int32, 0, n) // candidate number of each hit, in merge order
	var items []*Item         // by candidate number
	var count []int32         // evidence entries by candidate number
	for _, gen := range order {
		for _, h := range hits[gen] {
			c, ok := byID[h.Item.ID]
			if !ok {
				c = int32(len(items))
				byID[h.Item.ID] = c
				items = append(items, h.Item)
				count = append(count, 0)
			}
			of = append(of, c)
			count[c]++
		}
	}
	slab := make([]Candidate, len(items))
	out := make([]*Candidate, len(items))
	evidence := make([]Evidence, n)
	at := 0
	for c, it := range items {
		end := at + int(count[c])
		slab[c] = Candidate{Item: it, Evidence: evidence[at:at:end]}
		out[c] = &slab[c]
		at = end
	}
	k := 0
	for _, gen := range order {
		for i, h := range hits[gen] {
			c := &slab[of[k]]
			k++
			c.Evidence = append(c.Evidence, Evidence{Generator: gen, Score: h.Score, Rank: i + 1, Distance: h.Distance})
		}
	}
	return out
}

// FallbackError is returned, together with hits, by a generator whose
// primary backend failed or was late and whose fallback answered instead
// (Neo4j hops answered by the store's own walk). The engine keeps the
// hits and reports the error as a warning: the pack is complete, but an
// operator should know the primary is unwell.
type FallbackError struct {
	Primary  string // the backend that failed, e.g. "neo4j"
	Fallback string // what answered, e.g. "store CTE"
	Err      error
}

func (e *FallbackError) Error() string {
	return fmt.Sprintf("%s failed (%v); %s answered instead", e.Primary, e.Err, e.Fallback)
}

func (e *FallbackError) Unwrap() error { return e.Err }

// HitLimit checks a query's limit and applies a generator's default when
// it is 0. A negative limit is an invalid_argument error on field "limit".
func HitLimit(limit, def int) (int, error) {
	switch {
	case limit < 0:
		return 0, Errorf(EINVALID, "limit", "limit must be >= 0, got %d", limit)
	case limit == 0:
		return def, nil
	}
	return limit, nil
}

// HopLimit checks a query's hop bound and applies DefaultMaxHops when it is
// 0. A negative bound, or one above max (the backend's own ceiling; 0 for
// none), is an invalid_argument error on field "max_hops".
func HopLimit(maxHops, max int) (int, error) {
	switch {
	case maxHops < 0:
		return 0, Errorf(EINVALID, "max_hops", "max_hops must be >= 0, got %d", maxHops)
	case maxHops == 0:
		return DefaultMaxHops, nil
	case max > 0 && maxHops > max:
		return 0, Errorf(EINVALID, "max_hops", "max_hops must be at most %d, got %d", max, maxHops)
	}
	return maxHops, nil
}

// HopBounds checks a graph query's limit and hop bound, applying the
// defaults: defaultLimit hits (with Targets, as many as there are targets),
// and DefaultMaxHops. ceiling is the backend's own hop ceiling (0 for none).
func HopBounds(q CandidateQuery, defaultLimit, ceiling int) (limit, maxHops int, err error) {
	if len(q.Targets) > 0 {
		defaultLimit = len(q.Targets) // every target reached
	}
	if limit, err = HitLimit(q.Limit, defaultLimit); err != nil {
		return 0, 0, err
	}
	if maxHops, err = HopLimit(q.MaxHops, ceiling); err != nil {
		return 0, 0, err
	}
	return limit, maxHops, nil
}

// ReadPresent reads ids from a store for mirroring: the items it holds, and
// the ids it does not (deleted, or never written), which a mirror removes.
func ReadPresent(ctx context.Context, get func(context.Context, string) (*Item, error), ids []string) (present []*Item, absent []string, err error) {
	for _, id := range ids {
		it, err := get(ctx, id)
		switch {
		case ErrorCode(err) == ENOTFOUND:
			absent = append(absent, id)
		case err != nil:
			return nil, nil, fmt.Errorf("reading item %q from the store: %w", id, err)
		default:
			present = append(present, it)
		}
	}
	return present, absent, nil
}
