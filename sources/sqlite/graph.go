package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/h4r/h4r"
)

const defaultGraphLimit = 500

// graph is the causal-hop generator: a breadth-first walk over links from
// the anchors, as a recursive query.
type graph struct{ s *Store }

func (graph) Name() string { return h4r.GenGraph }

// hopsSQL walks the links from the anchors. walk holds (item, hops) pairs;
// UNION drops a pair seen before, so cycles end, and the hop bound ends the
// rest, which keeps walk within items × (maxHops+1) rows. The second
// recursive step goes against the arrows and is off in directed mode. A
// walk passes only through items that exist: a link to an item not yet
// ingested, or deleted, leads nowhere. Filters apply to what is returned,
// not to the walk, so a path through a filtered-out item still counts.
const hopsSQL = `WITH RECURSIVE walk (id, hops) AS (
		SELECT id, 0 FROM items WHERE id IN (SELECT value FROM json_each(?))
		UNION
		SELECT l.target, w.hops + 1 FROM walk w
			JOIN links l ON l.source = w.id
			JOIN items n ON n.id = l.target
			WHERE w.hops < ?
		UNION
		SELECT l.source, w.hops + 1 FROM walk w
			JOIN links l ON l.target = w.id
			WHERE w.hops < ? AND NOT ?
	),
	reached (id, distance) AS (SELECT id, min(hops) FROM walk GROUP BY id)
	SELECT ` + itemColumns + `, r.distance
	FROM reached r JOIN items i ON i.id = r.id
	WHERE 1`

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
	where, filterArgs, err := whereFilters(q.Filters)
	if err != nil {
		return nil, err
	}
	if len(q.Anchors) == 0 {
		return nil, nil
	}
	anchors, err := json.Marshal(q.Anchors)
	if err != nil {
		return nil, fmt.Errorf("encoding anchors: %w", err)
	}
	query := hopsSQL + where + ` ORDER BY r.distance, i.id LIMIT ?`
	args := append(append([]any{string(anchors), maxHops, maxHops, q.Directed}, filterArgs...), limit)

	var hits []h4r.Hit
	err = g.s.readTx(ctx, func(tx *sql.Tx) error {
		var distances []*int
		items, err := queryItems(ctx, tx, query, args, func() []any {
			distances = append(distances, new(int))
			return []any{distances[len(distances)-1]}
		})
		if err != nil {
			return err
		}
		hits = make([]h4r.Hit, len(items))
		for i, it := range items {
			hits[i] = h4r.Hit{Item: it, Distance: *distances[i]}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking links from %d anchors: %w", len(q.Anchors), err)
	}
	return hits, nil
}
