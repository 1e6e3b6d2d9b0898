package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// The checks of a batch's supersedes links, run in the write transaction
// after its links are written: the first link (by source, position) whose
// target is no item, then the first that lies on a cycle of supersedes
// links. ?1 is the JSON list of the batch's ids; ?2, when not empty, the
// one target whose links are checked (the link AddLink adds).
const (
	supersedesMissingSQL = `SELECT l.source, l.position, l.target FROM links l
		WHERE l.type = 'supersedes' AND l.target_type = '' AND l.source IN (SELECT value FROM json_each(?1))
		AND (?2 = '' OR l.target = ?2) AND NOT EXISTS (SELECT 1 FROM items i WHERE i.id = l.target)
		ORDER BY l.source, l.position LIMIT 1`
	supersedesCycleSQL = `WITH RECURSIVE walk (start, position, target, node) AS (
			SELECT l.source, l.position, l.target, l.target FROM links l
			WHERE l.type = 'supersedes' AND l.target_type = '' AND l.source IN (SELECT value FROM json_each(?1))
			AND (?2 = '' OR l.target = ?2)
			UNION
			SELECT w.start, w.position, w.target, l.target FROM walk w
			JOIN links l ON l.source = w.node AND l.type = 'supersedes' AND l.target_type = ''
		)
		SELECT start, position, target FROM walk WHERE node = start ORDER BY start, position LIMIT 1`
)

// checkSupersedes refuses the batch when one of its items supersedes an
// item that does not exist, or one that supersedes it in turn
// (sqlkit.CheckSupersedes).
func checkSupersedes(ctx context.Context, tx *sql.Tx, items []h4r.Item) error {
	return sqlkit.CheckSupersedes(items, func(ids []string) (*sqlkit.BadSupersedes, error) {
		return supersedesProblem(ctx, tx, ids, "")
	})
}

// supersedesProblem returns the first supersedes link held by one of ids
// (to target, when not empty) that names no item or lies on a cycle; nil
// when there is none.
func supersedesProblem(ctx context.Context, tx *sql.Tx, ids []string, target string) (*sqlkit.BadSupersedes, error) {
	list := ""
	return sqlkit.SupersedesProblem(ctx, ids, supersedesMissingSQL, supersedesCycleSQL,
		func(ctx context.Context, query string, p *sqlkit.BadSupersedes) (bool, error) {
			if list == "" {
				var err error
				if list, err = jsonList(ids); err != nil {
					return false, err
				}
			}
			err := tx.QueryRowContext(ctx, query, list, target).Scan(&p.Source, &p.Position, &p.Target)
			if errors.Is(err, sql.ErrNoRows) {
				return false, nil
			}
			return err == nil, err
		})
}
