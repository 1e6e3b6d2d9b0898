package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/sources"
)

const defaultGraphLimit = 500

// graph is the causal-hop generator: a breadth-first walk over links from
// the anchors, one query per hop (frontier.go).
type graph struct{ s *Store }

func (graph) Name() string { return sources.GenGraph }

// Generate returns the items within q.MaxHops links of q.Anchors (default
// sources.DefaultMaxHops), each once with its smallest distance; anchors
// that exist come back at distance 0. Links are followed both ways unless
// q.Directed, and only links of q.LinkTypes when it is not empty. A walk
// passes only through items that exist: a link to an item not yet
// ingested, or deleted, leads nowhere. Filters (and q.Targets) apply to
// what is returned, not to the walk, so a path through a filtered-out item
// still counts. Hits are ordered by distance, then id.
func (g graph) Generate(ctx context.Context, q sources.Query) ([]sources.Hit, error) {
	limit, maxHops, err := hopBounds(q)
	if err != nil {
		return nil, err
	}
	// The reached ids and distances are $1 and $2 of the final query; the
	// filters' arguments follow.
	p := &params{}
	p.add(nil)
	p.add(nil)
	where, err := whereFilters(q.Filters, p)
	if err != nil {
		return nil, err
	}
	if len(q.Anchors) == 0 {
		return nil, nil
	}
	query := `SELECT ` + itemColumns + `, r.distance
		FROM unnest($1::text[], $2::int[]) AS r (id, distance) JOIN items i ON i.id = r.id
		WHERE true` + where + ` ORDER BY r.distance, i.id LIMIT ` + p.add(limit)
	w := walk{anchors: q.Anchors, maxHops: maxHops, directed: q.Directed, types: q.LinkTypes, targets: q.Targets}
	if where == "" {
		w.enough = limit
	}

	var hits []sources.Hit
	err = g.s.read(ctx, func(ctx context.Context) error {
		// One snapshot for every step of the walk.
		tx, err := g.s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a read has nothing to commit
		reached, err := walkFrontier(ctx, tx, w)
		if err != nil || len(reached) == 0 {
			hits = nil
			return err
		}
		ids, dists := make([]string, len(reached)), make([]int32, len(reached))
		for i, r := range reached {
			ids[i], dists[i] = r.id, int32(r.distance)
		}
		p.args[0], p.args[1] = ids, dists
		var distances []*int32
		items, err := queryItemsOn(ctx, tx, query, p.args, func() []any {
			distances = append(distances, new(int32))
			return []any{distances[len(distances)-1]}
		})
		if err != nil {
			return err
		}
		hits = make([]sources.Hit, len(items))
		for i, it := range items {
			hits[i] = sources.Hit{Item: it, Distance: int(*distances[i])}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking links from %d anchors: %w", len(q.Anchors), err)
	}
	return hits, nil
}

// hopBounds checks a hop query's limit and depth and applies the defaults:
// with targets, limit 0 means every target reached.
func hopBounds(q sources.Query) (limit, maxHops int, err error) {
	def := defaultGraphLimit
	if len(q.Targets) > 0 {
		def = len(q.Targets)
	}
	if limit, err = sources.HitLimit(q.Limit, def); err != nil {
		return 0, 0, err
	}
	switch maxHops = q.MaxHops; {
	case maxHops < 0:
		return 0, 0, h4r.Errorf(h4r.EINVALID, "max_hops", "max_hops must be >= 0, got %d", maxHops)
	case maxHops == 0:
		maxHops = sources.DefaultMaxHops
	}
	return limit, maxHops, nil
}
