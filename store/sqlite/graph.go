package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/linkgraph"
)

const defaultGraphLimit = 500

// graph is the causal-hop generator: a breadth-first walk over links from
// the anchors, in the link graph the store keeps in memory (adjacency.go).
type graph struct{ s *Store }

func (graph) Name() string { return h4r.GenGraph }

// Generate returns the items within q.MaxHops links of q.Anchors (default
// h4r.DefaultMaxHops), each once with its smallest distance; anchors
// that exist come back at distance 0. Links are followed both ways unless
// q.Directed, and only links of q.LinkTypes when it is not empty. A walk
// passes only through items that exist: a link to an item not yet
// ingested, or deleted, leads nowhere. Filters (and q.Targets) apply to
// what is returned, not to the walk, so a path through a filtered-out item
// still counts. Hits are ordered by distance, then id.
func (g graph) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	return g.generate(ctx, q, false)
}

// GenerateBeyondAnchors is Generate without the hits at distance 0: the
// same walk and limit (the anchors count towards it), but the anchors are
// neither listed nor read. The supersedes walk asks for the items one link
// away from every candidate, and most candidates hold no such link:
// reading them would be most of its cost.
func (g graph) GenerateBeyondAnchors(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	return g.generate(ctx, q, true)
}

func (g graph) generate(ctx context.Context, q h4r.CandidateQuery, beyond bool) ([]h4r.Hit, error) {
	limit, maxHops, err := h4r.HopBounds(q, defaultGraphLimit, 0)
	if err != nil {
		return nil, err
	}
	where, filterArgs, err := whereFilters(q.Filters)
	if err != nil {
		return nil, err
	}
	if len(q.Anchors) == 0 {
		return nil, nil
	}
	w := linkgraph.Walk{Anchors: q.Anchors, MaxHops: maxHops, Directed: q.Directed, Types: q.LinkTypes, Targets: q.Targets}
	if where == "" {
		w.Enough = limit
	}
	var hits []h4r.Hit
	err = g.s.readTx(ctx, func(tx *sql.Tx) error {
		gen, err := g.s.ensureGraph(ctx, tx)
		if err != nil {
			return err
		}
		var picked []linkgraph.Reach
		if beyond && where == "" {
			// The anchors are neither listed nor read; they take their
			// part of the limit all the same.
			reached, anchors := g.s.adj.walkBeyond(w)
			picked = reached[:max(0, min(limit-anchors, len(reached)))]
		} else {
			picked, err = firstPassing(ctx, tx, g.s.adj.walk(w), limit, where, filterArgs)
			if err != nil {
				return err
			}
		}
		for beyond && len(picked) > 0 && picked[0].Distance == 0 { // first: by distance
			picked = picked[1:]
		}
		hits, err = g.hydrate(ctx, tx, gen, picked)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("walking links from %d anchors: %w", len(q.Anchors), err)
	}
	return hits, nil
}

// firstPassing returns the first limit of reached that pass the filter
// conditions where, checking growing runs of them, so that a filter most
// items pass costs one lookup.
func firstPassing(ctx context.Context, tx *sql.Tx, reached []linkgraph.Reach, limit int, where string, args []any) ([]linkgraph.Reach, error) {
	if where == "" {
		return reached[:min(limit, len(reached))], nil
	}
	var kept []linkgraph.Reach
	for start := 0; start < len(reached) && len(kept) < limit; {
		end := min(len(reached), start+max((limit-len(kept))*filterGrowth, 64))
		ids := make([]string, 0, end-start)
		for _, r := range reached[start:end] {
			ids = append(ids, r.ID)
		}
		pass, err := passingIDs(ctx, tx, ids, where, args)
		if err != nil {
			return nil, err
		}
		for _, r := range reached[start:end] {
			if pass[r.ID] && len(kept) < limit {
				kept = append(kept, r)
			}
		}
		start = end
	}
	return kept, nil
}

// hydrate reads the items reached as of tx's snapshot (of graph generation
// gen), keeping their order. An item deleted since the walk is left out.
// Their links come from memory when it holds that generation still: on a
// dense graph reading them is most of the cost (a hundred CISI abstracts
// hold some 5,000 links).
func (g graph) hydrate(ctx context.Context, tx *sql.Tx, gen int64, reached []linkgraph.Reach) ([]h4r.Hit, error) {
	if len(reached) == 0 {
		return nil, nil
	}
	ids := make([]string, len(reached))
	for i, r := range reached {
		ids[i] = r.ID
	}
	byID, err := g.read(ctx, tx, gen, ids)
	if err != nil {
		return nil, err
	}
	hits := make([]h4r.Hit, 0, len(reached))
	for _, r := range reached {
		if it := byID[r.ID]; it != nil {
			hits = append(hits, h4r.Hit{Item: it, Distance: r.Distance})
		}
	}
	return hits, nil
}

// read reads the items with the given ids: through the item cache, or,
// without one, with their links from memory when it holds generation gen.
func (g graph) read(ctx context.Context, tx *sql.Tx, gen int64, ids []string) (map[string]*h4r.Item, error) {
	if g.s.items.budget > 0 {
		return g.s.readItems(ctx, tx, ids)
	}
	list, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	items, err := queryItemRows(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE i.id IN (SELECT value FROM json_each(?))`, []any{list}, nil)
	if err != nil {
		return nil, err
	}
	if !g.s.adj.fillLinks(gen, items) {
		if err := loadLinks(ctx, tx, items); err != nil {
			return nil, err
		}
	}
	byID := make(map[string]*h4r.Item, len(items))
	for _, it := range items {
		byID[it.ID] = it
	}
	return byID, nil
}
