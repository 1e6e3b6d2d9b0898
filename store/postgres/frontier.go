package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/linkgraph"
)

// A walk is a breadth-first search with the visited set held here: one
// query per hop level asks for the neighbours of the frontier, and only
// those not seen before make the next frontier. The recursive query it
// replaces kept (item, hops) pairs, so it expanded an item again for every
// distance it was reached at, and on a dense graph spent hundreds of
// milliseconds on paths (BenchmarkGraphCISI). Every query of a walk, and
// the one reading its hits, runs in one read-only snapshot; the statements
// that begin and end it travel with the first and the last query, so that
// a 2-hop walk that stops early costs two round trips.

// beginWalk begins a walk's snapshot.
const beginWalk = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`

// firstLevelsSQL returns the anchors $1 that are items, at distance 0, and
// the items one link from them, at 1 when $4 (one hop is allowed). Its
// neighbour steps are neighboursSQL's.
const firstLevelsSQL = `WITH a AS (SELECT id FROM items WHERE id = ANY($1::text[]))
	SELECT id, 0 FROM a
	UNION ALL
	(SELECT l.target, 1 FROM a JOIN links l ON l.source = a.id JOIN items n ON n.id = l.target
		WHERE $4::boolean AND ($3::text[] IS NULL OR l.type = ANY($3::text[]))
	UNION
	SELECT l.source, 1 FROM a JOIN links l ON l.target = a.id
		WHERE $4::boolean AND NOT $2::boolean AND ($3::text[] IS NULL OR l.type = ANY($3::text[])))`

// neighboursSQL returns the items one link from the frontier $1: along
// the links it holds, to targets that are items, and against the links it
// receives unless directed ($2); only links of the types $3 when not null.
// A link's source is always an item (a foreign key).
const neighboursSQL = `SELECT l.target FROM links l JOIN items n ON n.id = l.target
		WHERE l.source = ANY($1::text[]) AND ($3::text[] IS NULL OR l.type = ANY($3::text[]))
	UNION
	SELECT l.source FROM links l
		WHERE l.target = ANY($1::text[]) AND NOT $2::boolean AND ($3::text[] IS NULL OR l.type = ANY($3::text[]))`

// lastHopSQL returns which of the targets $1 (not reached yet) are one
// link from the frontier $2: the last hop of a walk for targets, searched
// from the targets' side, whose links are far fewer than the frontier's
// (on CISI, 100 targets hold some 5,000 links; a 2-hop frontier, 90,000).
// $3 and $4 are neighboursSQL's $2 and $3.
const lastHopSQL = `SELECT l.target FROM links l JOIN items n ON n.id = l.target
		WHERE l.target = ANY($1::text[]) AND l.source = ANY($2::text[]) AND ($4::text[] IS NULL OR l.type = ANY($4::text[]))
	UNION
	SELECT l.source FROM links l
		WHERE l.source = ANY($1::text[]) AND l.target = ANY($2::text[]) AND NOT $3::boolean AND ($4::text[] IS NULL OR l.type = ANY($4::text[]))`

// walkFrontier begins a snapshot on conn and searches breadth-first in it
// from the anchors that are items, through items only, each once, and
// returns what it reached ordered by distance, then id. It leaves the
// snapshot open for reading the hits; the caller ends it (a connection
// released inside it is closed by the pool, not reused).
// The walk is described as the one in memory is (linkgraph.Walk), and
// both answer as the recursive query did (TestWalkEqualsCTE,
// TestMemoryWalkEqualsCTE).
func walkFrontier(ctx context.Context, conn *pgx.Conn, w linkgraph.Walk) ([]linkgraph.Reach, error) {
	var types []string // NULL: every type
	if len(w.Types) > 0 {
		types = w.Types
	}
	var wanted map[string]bool // targets not reached yet; nil: report all
	if len(w.Targets) > 0 {
		wanted = make(map[string]bool, len(w.Targets))
		for _, id := range w.Targets {
			wanted[id] = true
		}
	}
	seen := map[string]bool{}
	var out []linkgraph.Reach
	level := func(ids []string, d int) {
		slices.Sort(ids)
		for _, id := range ids {
			if wanted == nil || wanted[id] {
				out = append(out, linkgraph.Reach{ID: id, Distance: d})
				delete(wanted, id)
			}
		}
	}
	first, err := firstLevels(ctx, conn, w.Anchors, w.Directed, types, w.MaxHops >= 1)
	if err != nil {
		return nil, fmt.Errorf("reading the anchors and their neighbours: %w", err)
	}
	var frontier []string
	for d, ids := range first {
		next := ids[:0]
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				next = append(next, id)
			}
		}
		if d > 0 && w.Done(len(wanted), len(out)) {
			return out, nil
		}
		level(next, d)
		frontier = next
	}
	for d := 2; d <= w.MaxHops && len(frontier) > 0; d++ {
		if w.Done(len(wanted), len(out)) {
			break
		}
		var found []string
		if wanted != nil && d == w.MaxHops {
			found, err = queryIDs(ctx, conn, lastHopSQL, slices.Collect(maps.Keys(wanted)), frontier, w.Directed, types)
		} else {
			found, err = queryIDs(ctx, conn, neighboursSQL, frontier, w.Directed, types)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the items %d hops away: %w", d, err)
		}
		next := found[:0]
		for _, id := range found {
			if !seen[id] {
				seen[id] = true
				next = append(next, id)
			}
		}
		level(next, d)
		frontier = next
	}
	return out, nil
}

// firstLevels begins the snapshot and returns the ids at distance 0 and 1
// (the latter may repeat the former), in one round trip.
func firstLevels(ctx context.Context, conn *pgx.Conn, anchors []string, directed bool, types []string, oneHop bool) ([2][]string, error) {
	var levels [2][]string
	b := &pgx.Batch{}
	b.Queue(beginWalk)
	b.Queue(firstLevelsSQL, anchors, directed, types, oneHop)
	br := conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close() //nolint:errcheck // the same error
		return levels, fmt.Errorf("beginning a snapshot: %w", err)
	}
	rows, err := br.Query()
	if err == nil {
		var id string
		var d int32
		_, err = pgx.ForEachRow(rows, []any{&id, &d}, func() error {
			levels[d] = append(levels[d], id)
			return nil
		})
	}
	if err := br.Close(); err != nil {
		return levels, err
	}
	return levels, err
}

func queryIDs(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// readHits runs query, selecting hitColumns, in the walk's snapshot on
// conn and ends the snapshot, in one round trip.
func readHits(ctx context.Context, conn *pgx.Conn, query string, args []any) ([]h4r.Hit, error) {
	b := &pgx.Batch{}
	b.Queue(query, args...)
	b.Queue(`ROLLBACK`) // a read has nothing to commit
	br := conn.SendBatch(ctx, b)
	hits, err := queryHits(ctx, batchQuerier{br}, query, args)
	if err == nil {
		_, err = br.Exec()
	}
	return hits, errors.Join(err, br.Close())
}

// batchQuerier reads the next result of a batch as a query's.
type batchQuerier struct{ br pgx.BatchResults }

func (b batchQuerier) Query(context.Context, string, ...any) (pgx.Rows, error) { return b.br.Query() }
