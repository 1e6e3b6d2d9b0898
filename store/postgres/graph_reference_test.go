package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/storetest"
)

// cteHopsSQL is the recursive query hops were answered with before the
// frontier walk (frontier.go), kept as the reference that walk must equal
// and the baseline of BenchmarkGraphCISI. walk holds (item, hops) pairs;
// UNION drops a pair seen before, so cycles end, and the hop bound ($2)
// ends the rest. Two additions since: link types ($4) and targets ($5), a
// condition each, null for none.
const cteHopsSQL = `WITH RECURSIVE walk (id, hops) AS (
		SELECT id, 0 FROM items WHERE id = ANY($1::text[])
		UNION
		SELECT e.next, w.hops + 1 FROM walk w
		CROSS JOIN LATERAL (
			SELECT l.target AS next FROM links l JOIN items n ON n.id = l.target WHERE l.source = w.id
				AND ($4::text[] IS NULL OR l.type = ANY($4::text[]))
			UNION ALL
			SELECT l.source FROM links l WHERE l.target = w.id AND NOT $3::boolean
				AND ($4::text[] IS NULL OR l.type = ANY($4::text[]))
		) e
		WHERE w.hops < $2
	),
	reached (id, distance) AS (SELECT id, min(hops) FROM walk GROUP BY id)
	SELECT ` + itemColumns + `, r.distance
	FROM reached r JOIN items i ON i.id = r.id
	WHERE ($5::text[] IS NULL OR r.id = ANY($5::text[]))`

// oneQueryGraph is a graph generator answering with one statement: the
// recursive reference (cteHopsSQL), or levelsSQL.
type oneQueryGraph struct {
	s      *Store
	levels bool
}

func (oneQueryGraph) Name() string { return h4r.GenGraph }

func (g oneQueryGraph) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	limit, maxHops, err := h4r.HopBounds(q, defaultGraphLimit, 0)
	if err != nil {
		return nil, err
	}
	var types, targets []string // NULL: every type, every item
	if len(q.LinkTypes) > 0 {
		types = q.LinkTypes
	}
	if len(q.Targets) > 0 {
		targets = q.Targets
	}
	p := &params{}
	if g.levels {
		p.add(q.Anchors)
		p.add(q.Directed)
		p.add(types)
		p.add(targets)
		p.add(0) // enough, once the filters are known
	} else {
		p.add(q.Anchors)
		p.add(maxHops)
		p.add(q.Directed)
		p.add(types)
		p.add(targets)
	}
	where, err := whereFilters(q.Filters, p)
	if err != nil {
		return nil, err
	}
	if len(q.Anchors) == 0 {
		return nil, nil
	}
	if g.levels {
		if where == "" {
			p.args[4] = limit
		}
		query := levelsSQL(maxHops) + where + ` ORDER BY r.distance, r.id LIMIT ` + p.add(limit) + `)
			` + hitColumns + `
			FROM hit h JOIN items i ON i.id = h.id` + hitLinks + `
			ORDER BY h.distance, i.id`
		var hits []h4r.Hit
		err = g.s.read(ctx, func(ctx context.Context) error {
			hits, err = queryHits(ctx, g.s.pool, query, p.args)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("walking links from %d anchors in one query: %w", len(q.Anchors), err)
		}
		return hits, nil
	}
	query := cteHopsSQL + where + ` ORDER BY r.distance, i.id LIMIT ` + p.add(limit)
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
		return nil, fmt.Errorf("walking links from %d anchors (CTE): %w", len(q.Anchors), err)
	}
	return hits, nil
}

// levelsSQL is the other way to walk without re-expanding paths that was
// measured against the frontier walk (BenchmarkGraphCISI): one statement
// that spells out a level per hop, each the neighbours of the level before
// that are in no earlier level, the visited set being those levels. A
// level is computed only while fewer items than $5 (0: no bound) were
// reached, or, with targets, fewer targets than exist: Postgres runs an
// uncorrelated condition once, before the scan it guards. Parameters:
// anchors $1, directed $2, link types $3, targets $4 (null for none), $5;
// the filters follow. The statement ends inside "hit AS (… WHERE …", for
// the caller to add filters, order and limit, close and select the hits.
func levelsSQL(maxHops int) string {
	var sb strings.Builder
	sb.WriteString(`WITH h0 AS (SELECT id FROM items WHERE id = ANY($1::text[])),
	wanted AS (SELECT CASE WHEN $4::text[] IS NULL THEN NULL ELSE (SELECT count(*) FROM items WHERE id = ANY($4::text[])) END AS n)`)
	counted := func(k int) string { // targets (or items) reached in levels 0…k-1
		var parts []string
		for j := range k {
			parts = append(parts, fmt.Sprintf(`(SELECT count(*) FROM h%d WHERE $4::text[] IS NULL OR id = ANY($4::text[]))`, j))
		}
		return strings.Join(parts, " + ")
	}
	for k := 1; k <= maxHops; k++ {
		fmt.Fprintf(&sb, `,
	h%d AS (SELECT e.id FROM (
			SELECT l.target AS id FROM h%d f JOIN links l ON l.source = f.id
				WHERE $3::text[] IS NULL OR l.type = ANY($3::text[])
			UNION
			SELECT l.source FROM h%d f JOIN links l ON l.target = f.id
				WHERE NOT $2::boolean AND ($3::text[] IS NULL OR l.type = ANY($3::text[]))
		) e JOIN items x ON x.id = e.id
		WHERE ($5::int = 0 OR %s < $5::int)
			AND ((SELECT n FROM wanted) IS NULL OR %s < (SELECT n FROM wanted))`, k, k-1, k-1, counted(k), counted(k))
		for j := range k {
			fmt.Fprintf(&sb, ` AND NOT EXISTS (SELECT 1 FROM h%d s WHERE s.id = e.id)`, j)
		}
		sb.WriteString(`)`)
	}
	sb.WriteString(`,
	reached (id, distance) AS (SELECT id, 0 FROM h0`)
	for k := 1; k <= maxHops; k++ {
		fmt.Fprintf(&sb, ` UNION ALL SELECT id, %d FROM h%d`, k, k)
	}
	sb.WriteString(`),
	hit AS (SELECT r.id, r.distance FROM reached r JOIN items i ON i.id = r.id
		WHERE ($4::text[] IS NULL OR r.id = ANY($4::text[]))`)
	return sb.String()
}

// TestWalkEqualsCTE: the frontier walk, and the one-statement levels
// walk, answer as the recursive query did, on random graphs with cycles,
// self-links, links to items never ingested, rewrites and deletes, with
// filters, link types and targets.
func TestWalkEqualsCTE(t *testing.T) {
	s := newStore(t)
	storetest.CompareHops(t, s, oneQueryGraph{s: s}, 1, 30)
	t.Run("levels", func(t *testing.T) {
		s := newStore(t)
		storetest.CompareHops(t, s, oneQueryGraph{s: s}, 2, 15)
		// the levels walk as the store's generator, against the CTE
		storetest.CompareHops(t, levelsStore{s}, oneQueryGraph{s: s}, 3, 15)
	})
}

// levelsStore is the store with the levels walk as its graph generator.
type levelsStore struct{ *Store }

func (s levelsStore) Graph() h4r.Generator { return oneQueryGraph{s: s.Store, levels: true} }
