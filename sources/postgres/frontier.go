package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// A walk is a breadth-first search with the visited set held here: one
// query per hop level asks for the neighbours of the frontier, and only
// those not seen before make the next frontier. The recursive query it
// replaces kept (item, hops) pairs, so it expanded an item again for every
// distance it was reached at, and on a dense graph spent hundreds of
// milliseconds on paths (BenchmarkGraphCISI).

// anchorsSQL keeps the anchors that are items.
const anchorsSQL = `SELECT id FROM items WHERE id = ANY($1::text[])`

// neighboursSQL returns the items one link from the frontier $1: along
// the links it holds, to targets that are items, and against the links it
// receives unless directed ($2); only links of the types $3 when not null.
// A link's source is always an item (a foreign key).
const neighboursSQL = `SELECT l.target FROM links l JOIN items n ON n.id = l.target
		WHERE l.source = ANY($1::text[]) AND ($3::text[] IS NULL OR l.type = ANY($3::text[]))
	UNION
	SELECT l.source FROM links l
		WHERE l.target = ANY($1::text[]) AND NOT $2::boolean AND ($3::text[] IS NULL OR l.type = ANY($3::text[]))`

// reach is an item a walk reached, at its smallest distance.
type reach struct {
	id       string
	distance int
}

// walk is one breadth-first search.
type walk struct {
	anchors  []string
	maxHops  int
	directed bool
	types    []string // follow only links of these types; all when empty
	targets  []string // report only these items; all when empty
	// enough stops the search after the first level at which this many
	// items were reached (0: never); the hits are then complete, since
	// later levels sort after them.
	enough int
}

// walkFrontier searches breadth-first from the anchors that are items,
// through items only, each once, and returns what it reached ordered by
// distance, then id.
func walkFrontier(ctx context.Context, q querier, w walk) ([]reach, error) {
	var types []string // NULL: every type
	if len(w.types) > 0 {
		types = w.types
	}
	var wanted map[string]bool // targets not reached yet; nil: report all
	if len(w.targets) > 0 {
		wanted = make(map[string]bool, len(w.targets))
		for _, id := range w.targets {
			wanted[id] = true
		}
	}
	seen := map[string]bool{}
	var out []reach
	level := func(ids []string, d int) {
		slices.Sort(ids)
		for _, id := range ids {
			if wanted == nil || wanted[id] {
				out = append(out, reach{id, d})
				delete(wanted, id)
			}
		}
	}
	frontier, err := queryIDs(ctx, q, anchorsSQL, w.anchors)
	if err != nil {
		return nil, fmt.Errorf("reading the anchors: %w", err)
	}
	for _, id := range frontier {
		seen[id] = true
	}
	level(frontier, 0)
	for d := 1; d <= w.maxHops && len(frontier) > 0; d++ {
		if (wanted != nil && len(wanted) == 0) || (w.enough > 0 && len(out) >= w.enough) {
			break
		}
		found, err := queryIDs(ctx, q, neighboursSQL, frontier, w.directed, types)
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

func queryIDs(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
