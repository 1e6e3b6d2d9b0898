package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

// RecordAccess notes that the items with these ids were delivered. It only
// updates a map in memory; the counts reach the file within the flush
// interval, and on Close. Unknown ids are ignored when the counts are
// written.
func (s *Store) RecordAccess(ids []string) { s.access.Record(ids) }

// flushAccess adds pending counts to the items in one transaction. An id
// with no item updates no row. It holds the store's write lock, so that
// the item cache takes the counts in commit order (itemcache.go).
func (s *Store) flushAccess(ctx context.Context, batch map[string]sqlkit.AccessPending) error {
	if err := s.vectors.writeMu.lock(ctx); err != nil {
		return fmt.Errorf("waiting for the writer: %w", err)
	}
	defer s.vectors.writeMu.Unlock()
	var before, after int64
	err := s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		if before, err = readItemGeneration(ctx, tx); err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx, `UPDATE items
			SET access_count = access_count + ?,
			    last_accessed_at = max(coalesce(last_accessed_at, ''), ?)
			WHERE id = ?`)
		if err != nil {
			return fmt.Errorf("preparing the access update: %w", err)
		}
		defer func() { err = errors.Join(err, stmt.Close()) }()
		for _, id := range slices.Sorted(maps.Keys(batch)) { // key order: fewer page jumps
			p := batch[id]
			if _, err := stmt.ExecContext(ctx, p.Count, formatTime(p.Last), id); err != nil {
				return fmt.Errorf("adding %d accesses to item %q: %w", p.Count, id, err)
			}
		}
		after, err = readItemGeneration(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	s.items.applied(before, after, func(c *itemCache) {
		for id, p := range batch {
			c.addAccess(id, p.Count, p.Last)
		}
	})
	return nil
}
