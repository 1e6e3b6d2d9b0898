package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
)

// The checks of a batch's supersedes links, run in the write transaction
// after its links are written: the first link (by source, position) whose
// target is no item, then the first that lies on a cycle of supersedes
// links. $1 is the batch's ids; $2, when not empty, the one target whose
// links are checked (the link AddLink adds).
const (
	supersedesMissingSQL = `SELECT l.source, l.position, l.target FROM links l
		WHERE l.type = 'supersedes' AND l.target_type = '' AND l.source = ANY($1::text[])
		AND ($2::text = '' OR l.target = $2::text) AND NOT EXISTS (SELECT 1 FROM items i WHERE i.id = l.target)
		ORDER BY l.source, l.position LIMIT 1`
	supersedesCycleSQL = `WITH RECURSIVE walk (start, position, target, node) AS (
			SELECT l.source, l.position, l.target, l.target FROM links l
			WHERE l.type = 'supersedes' AND l.target_type = '' AND l.source = ANY($1::text[])
			AND ($2::text = '' OR l.target = $2::text)
			UNION
			SELECT w.start, w.position, w.target, l.target FROM walk w
			JOIN links l ON l.source = w.node AND l.type = 'supersedes' AND l.target_type = ''
		)
		SELECT start, position, target FROM walk WHERE node = start ORDER BY start, position LIMIT 1`
)

// checkSupersedes refuses the batch when one of its items supersedes an
// item that does not exist, or one that supersedes it in turn: an
// *h4r.Error naming items[i].links[j].target.
func checkSupersedes(ctx context.Context, tx pgx.Tx, items []h4r.Item) error {
	var ids []string
	for i := range items {
		if len(items[i].Supersedes()) > 0 {
			ids = append(ids, items[i].ID)
		}
	}
	p, err := supersedesProblem(ctx, tx, ids, "")
	if err != nil || p == nil {
		return err
	}
	return h4r.SupersedesError(items, p.source, int(p.position), p.target, p.cycle)
}

// badSupersedes is the first supersedes link a check refused.
type badSupersedes struct {
	source, target string
	position       int32
	cycle          bool
}

// supersedesProblem returns the first supersedes link held by one of ids
// (to target, when not empty) that names no item or lies on a cycle; nil
// when there is none.
func supersedesProblem(ctx context.Context, tx pgx.Tx, ids []string, target string) (*badSupersedes, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	for _, q := range []struct {
		sql   string
		cycle bool
	}{{supersedesMissingSQL, false}, {supersedesCycleSQL, true}} {
		p := badSupersedes{cycle: q.cycle}
		err := tx.QueryRow(ctx, q.sql, ids, target).Scan(&p.source, &p.position, &p.target)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return nil, fmt.Errorf("checking the supersedes links of %d items: %w", len(ids), err)
		}
		return &p, nil
	}
	return nil, nil
}
