package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// AddLink adds l to the links the item id holds, unless it holds one of
// the same type to the same target already (added is then false). The
// check and the insert are one write transaction on the single writer,
// so concurrent adds to one item never lose one, as a read of the item
// followed by an upsert of it would. The item's version goes up. An item
// that does not exist is not_found; one holding h4r.MaxLinks links is
// invalid_argument on "links".
func (s *Store) AddLink(ctx context.Context, id string, l h4r.Link) (added bool, err error) {
	if id == "" {
		return false, h4r.Errorf(h4r.EINVALID, "id", "item id is required")
	}
	if err := h4r.ValidateLink(l, "link"); err != nil {
		return false, err
	}
	if l.Strength == 0 {
		l.Strength = 1 // as Normalize sets it on upsert
	}
	var graphBefore, graphAfter int64
	var after *h4r.Item
	ctx, finish := sqlkit.WriteWithin(ctx, s.writeTimeout)
	defer func() { err = finish(err) }()
	v := &s.vectors
	if err := v.writeMu.lock(ctx); err != nil { // orders the link graph's updates, as upsertTx does
		return false, fmt.Errorf("linking item %q: waiting for the writer: %w", id, err)
	}
	defer v.writeMu.Unlock()
	err = s.runTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		added = false // runTx may run this again
		var n, same int
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM items WHERE id = ?1),
			(SELECT count(*) FROM links WHERE source = ?1), (SELECT count(*) FROM links WHERE source = ?1 AND type = ?2 AND target = ?3)`,
			id, l.Type, l.Target).Scan(&exists, &n, &same); err != nil {
			return fmt.Errorf("reading the links of item %q: %w", id, err)
		}
		switch {
		case !exists:
			return h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
		case same > 0:
			return nil
		case n >= h4r.MaxLinks:
			return h4r.Errorf(h4r.EINVALID, "links", "the item would hold %d links, the limit is %d", n+1, h4r.MaxLinks)
		}
		var err error
		if graphBefore, err = readGraphGeneration(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO links (source, position, target, type, strength, target_type, context)
			VALUES (?1, (SELECT coalesce(max(position), -1) + 1 FROM links WHERE source = ?1), ?2, ?3, ?4, ?5, ?6)`,
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
		if _, err := tx.ExecContext(ctx, `UPDATE items SET version = version + 1, updated_at = ? WHERE id = ?`, formatTime(s.now()), id); err != nil {
			return fmt.Errorf("raising the version of item %q: %w", id, err)
		}
		items, err := queryItems(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE i.id = ?`, []any{id}, nil)
		if err != nil || len(items) != 1 {
			return fmt.Errorf("reading item %q back: %w (%d rows)", id, err, len(items))
		}
		after, added = items[0], true
		graphAfter, err = readGraphGeneration(ctx, tx)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("linking item %q: %w", id, err)
	}
	if added {
		s.adj.applied(graphBefore, graphAfter, func(a *adjacency) { a.putItems([]encodedItem{{item: *after}}) })
	}
	return added, nil
}
