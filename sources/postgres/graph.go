package postgres

import (
	"context"
	"fmt"

	"github.com/h4r/h4r"
)

const defaultGraphLimit = 500

// graph is the causal-hop generator: a breadth-first walk over links from
// the anchors, as a recursive query.
type graph struct{ s *Store }

func (graph) Name() string { return h4r.GenGraph }

// hopsSQL walks the links from the anchors ($1). walk holds (item, hops)
// pairs; UNION drops a pair seen before, so cycles end, and the hop bound
// ($2) ends the rest, which keeps walk within items × (hops+1) rows.
// Postgres allows one reference to walk in the recursive term, so both
// directions are one lateral subquery; the way against the arrows is off
// in directed mode ($3). A walk passes only through items that exist: a
// link to an item not yet ingested, or deleted, leads nowhere (a link's
// source always exists: it is a foreign key). Filters apply to what is
// returned, not to the walk, so a path through a filtered-out item still
// counts.
const hopsSQL = `WITH RECURSIVE walk (id, hops) AS (
		SELECT id, 0 FROM items WHERE id = ANY($1::text[])
		UNION
		SELECT e.next, w.hops + 1 FROM walk w
		CROSS JOIN LATERAL (
			SELECT l.target AS next FROM links l JOIN items n ON n.id = l.target WHERE l.source = w.id
			UNION ALL
			SELECT l.source FROM links l WHERE l.target = w.id AND NOT $3::boolean
		) e
		WHERE w.hops < $2
	),
	reached (id, distance) AS (SELECT id, min(hops) FROM walk GROUP BY id)
	SELECT ` + itemColumns + `, r.distance
	FROM reached r JOIN items i ON i.id = r.id
	WHERE true`

// Generate returns the items within q.MaxHops links of q.Anchors (default
// h4r.DefaultMaxHops), each once with its smallest distance; anchors
// that exist come back at distance 0. Links are followed both ways unless
// q.Directed. Hits are ordered by distance, then id.
func (g graph) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	limit, err := h4r.HitLimit(q.Limit, defaultGraphLimit)
	if err != nil {
		return nil, err
	}
	maxHops, err := h4r.HopLimit(q.MaxHops, 0)
	if err != nil {
		return nil, err
	}
	p := &params{}
	p.add(q.Anchors)
	p.add(maxHops)
	p.add(q.Directed)
	where, err := whereFilters(q.Filters, p)
	if err != nil {
		return nil, err
	}
	if len(q.Anchors) == 0 {
		return nil, nil
	}
	query := hopsSQL + where + ` ORDER BY r.distance, i.id LIMIT ` + p.add(limit)

	var hits []h4r.Hit
	err = g.s.read(ctx, func(ctx context.Context) error {
		var distances []*int32
		items, err := g.s.queryItems(ctx, query, p.args, func() []any {
			distances = append(distances, new(int32))
			return []any{distances[len(distances)-1]}
		})
		if err != nil {
			return err
		}
		hits = make([]h4r.Hit, len(items))
		for i, it := range items {
			hits[i] = h4r.Hit{Item: it, Distance: int(*distances[i])}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking links from %d anchors: %w", len(q.Anchors), err)
	}
	return hits, nil
}
