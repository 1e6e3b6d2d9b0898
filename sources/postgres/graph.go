package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
)

const defaultGraphLimit = 500

// graph is the causal-hop generator: a breadth-first walk over links from
// the anchors, one query per hop (frontier.go), then one for the items.
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
	limit, maxHops, err := h4r.HopBounds(q, defaultGraphLimit, 0)
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
	query := `WITH hit AS (
			SELECT r.id, r.distance FROM unnest($1::text[], $2::int[]) AS r (id, distance) JOIN items i ON i.id = r.id
			WHERE true` + where + ` ORDER BY r.distance, r.id LIMIT ` + p.add(limit) + `)
		`
	cached := g.s.items.Enabled()
	if cached {
		// The hits' stamps; their items come through the cache
		// (readHitsCached).
		query += `SELECT ` + stampColumns + `, h.distance FROM hit h JOIN items i ON i.id = h.id ORDER BY h.distance, i.id`
	} else {
		query += hitColumns + `
		FROM hit h JOIN items i ON i.id = h.id` + hitLinks + `
		ORDER BY h.distance, i.id`
	}
	w := walk{anchors: q.Anchors, maxHops: maxHops, directed: q.Directed, types: q.LinkTypes, targets: q.Targets}
	if where == "" {
		w.enough = limit
	}

	var hits []h4r.Hit
	err = g.s.read(ctx, func(ctx context.Context) error {
		conn, err := g.s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		// Released inside the walk's snapshot (a failure midway), the
		// connection is closed by the pool rather than reused.
		defer conn.Release()
		reached, err := walkFrontier(ctx, conn.Conn(), w)
		if err != nil {
			return err
		}
		if len(reached) == 0 {
			hits = nil
			_, err := conn.Exec(ctx, `ROLLBACK`)
			return err
		}
		ids, dists := make([]string, len(reached)), make([]int32, len(reached))
		for i, r := range reached {
			ids[i], dists[i] = r.id, int32(r.distance)
		}
		p.args[0], p.args[1] = ids, dists
		if cached {
			hits, err = g.s.readHitsCached(ctx, conn.Conn(), query, p.args)
		} else {
			hits, err = readHits(ctx, conn.Conn(), query, p.args)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("walking links from %d anchors: %w", len(q.Anchors), err)
	}
	return hits, nil
}

// hitColumns select a hit: its item's fields, no links as JSON (decoding
// them is most of what reading a hundred CISI hits with their 5,000 links
// costs), the distance, and the links as three arrays (hitLinks).
const hitColumns = `SELECT ` + itemFields + `, NULL::json, h.distance, lk.targets, lk.types, lk.strengths`

// hitLinks joins the links of item i as arrays in their order.
const hitLinks = `
		LEFT JOIN LATERAL (SELECT array_agg(l.target ORDER BY l.position) AS targets,
				array_agg(l.type ORDER BY l.position) AS types, array_agg(l.strength ORDER BY l.position) AS strengths
			FROM links l WHERE l.source = i.id) lk ON true`

// queryHits runs a query selecting hitColumns.
func queryHits(ctx context.Context, q querier, query string, args []any) ([]h4r.Hit, error) {
	type linkArrays struct {
		distance       int32
		targets, types []string
		strengths      []float64
	}
	var rows []*linkArrays
	items, err := queryItemsOn(ctx, q, query, args, func() []any {
		r := &linkArrays{}
		rows = append(rows, r)
		return []any{&r.distance, &r.targets, &r.types, &r.strengths}
	})
	if err != nil {
		return nil, err
	}
	hits := make([]h4r.Hit, len(items))
	for i, it := range items {
		r := rows[i]
		if len(r.types) != len(r.targets) || len(r.strengths) != len(r.targets) {
			return nil, fmt.Errorf("links of item %q: %d targets, %d types, %d strengths", it.ID, len(r.targets), len(r.types), len(r.strengths))
		}
		if len(r.targets) > 0 {
			it.Links = make([]h4r.Link, len(r.targets))
			for j := range r.targets {
				it.Links[j] = h4r.Link{Type: r.types[j], Target: r.targets[j], Strength: r.strengths[j]}
			}
		}
		hits[i] = h4r.Hit{Item: it, Distance: int(r.distance)}
	}
	return hits, nil
}

// readHitsCached runs query, selecting stampColumns and the distance, in
// the walk's snapshot on conn and ends the snapshot, in one round trip,
// then reads the hits' items through the cache (readThrough: the ones it
// lacks at their stamps, on conn after the snapshot, so never older than
// it). The items are whole, links as stored (readHits reads only their
// types, targets and strengths).
func (s *Store) readHitsCached(ctx context.Context, conn *pgx.Conn, query string, args []any) ([]h4r.Hit, error) {
	b := &pgx.Batch{}
	b.Queue(query, args...)
	b.Queue(`ROLLBACK`) // a read has nothing to commit
	br := conn.SendBatch(ctx, b)
	var (
		sc       stampScanner
		distance int32
		stamps   []stamped
		dists    []int32
	)
	rows, err := br.Query()
	if err == nil {
		_, err = pgx.ForEachRow(rows, append(sc.dest(), &distance), func() error {
			stamps = append(stamps, sc.value())
			dists = append(dists, distance)
			return nil
		})
	}
	if err == nil {
		_, err = br.Exec()
	}
	if err := errors.Join(err, br.Close()); err != nil {
		return nil, fmt.Errorf("reading hits: %w", err)
	}
	items, err := s.readThrough(ctx, conn, stamps)
	if err != nil {
		return nil, err
	}
	hits := make([]h4r.Hit, 0, len(stamps))
	for i, r := range stamps {
		if it := items[r.id]; it != nil { // absent: deleted since the snapshot
			hits = append(hits, h4r.Hit{Item: it, Distance: int(dists[i])})
		}
	}
	return hits, nil
}
