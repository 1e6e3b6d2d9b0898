package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
)

// AddLink adds l to the links the item id holds, unless it holds one of
// the same type to the same target already (added is then false). The
// transaction locks the item's row (SELECT … FOR UPDATE), so
// concurrent adds to one item, from this process or another replica,
// are applied one after the other and never lose one, as a read of the
// item followed by an upsert of it would. The item's version goes up. An
// item that does not exist is not_found; one holding h4r.MaxLinks links
// is invalid_argument on "links".
func (s *Store) AddLink(ctx context.Context, id string, l h4r.Link) (added bool, err error) {
	if id == "" {
		return false, h4r.Errorf(h4r.EINVALID, "id", "item id is required")
	}
	if strings.IndexByte(id, 0) >= 0 {
		return false, h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	}
	if err := h4r.ValidateLink(l, "link"); err != nil {
		return false, err
	}
	if l.Strength == 0 {
		l.Strength = 1 // as Normalize sets it on upsert
	}
	err = s.writeTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		added = false
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM items WHERE id = $1 FOR UPDATE`, id).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
		} else if err != nil {
			return fmt.Errorf("locking item %q: %w", id, err)
		}
		var n, same int
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE type = $2 AND target = $3) FROM links WHERE source = $1`,
			id, l.Type, l.Target).Scan(&n, &same); err != nil {
			return fmt.Errorf("reading the links of item %q: %w", id, err)
		}
		switch {
		case same > 0:
			return nil
		case n >= h4r.MaxLinks:
			return h4r.Errorf(h4r.EINVALID, "links", "the item would hold %d links, the limit is %d", n+1, h4r.MaxLinks)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO links (source, position, target, type, strength, target_type, context)
			VALUES ($1, (SELECT coalesce(max(position), -1) + 1 FROM links WHERE source = $1), $2, $3, $4, $5, $6)`,
			id, l.Target, l.Type, l.Strength, l.TargetType, l.Context); err != nil {
			return fmt.Errorf("adding a link to item %q: %w", id, err)
		}
		if l.Type == h4r.LinkSupersedes && l.TargetType == h4r.TargetItem {
			p, err := supersedesProblem(ctx, tx, []string{id}, l.Target)
			if err != nil {
				return err
			}
			if p != nil {
				return h4r.SupersedesLinkError("link.target", id, l.Target, p.Cycle)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE items SET version = version + 1, updated_at = $2 WHERE id = $1`, id, s.now().UTC()); err != nil {
			return fmt.Errorf("raising the version of item %q: %w", id, err)
		}
		added = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("linking item %q: %w", id, err)
	}
	if added {
		s.nudgeGraph()
	}
	return added, nil
}
