package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

// RecordAccess notes that the items with these ids were delivered. It only
// updates a map in memory; the counts reach the database within the flush
// interval, in one statement, and on Close. Unknown ids are ignored when
// the counts are written.
func (s *Store) RecordAccess(ids []string) { s.access.Record(ids) }

// flushAccess adds pending counts to the items in one transaction: it
// locks the rows in id order (as Upsert does, so the two cannot deadlock),
// then updates them all in one statement. Several replicas add their own
// counts: the increments commute.
func (s *Store) flushAccess(ctx context.Context, batch map[string]sqlkit.AccessPending) error {
	ids := make([]string, 0, len(batch))
	for id := range batch {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	counts := make([]int64, len(ids))
	lasts := make([]time.Time, len(ids))
	for i, id := range ids {
		counts[i], lasts[i] = batch[id].Count, batch[id].Last
	}
	return s.writeTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM items WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
			return fmt.Errorf("locking %d items for their access counts: %w", len(ids), err)
		}
		_, err := tx.Exec(ctx, `UPDATE items i
			SET access_count = i.access_count + u.n,
			    last_accessed_at = greatest(i.Last_accessed_at, u.at)
			FROM unnest($1::text[], $2::bigint[], $3::timestamptz[]) AS u (id, n, at)
			WHERE i.id = u.id`, ids, counts, lasts)
		if err != nil {
			return fmt.Errorf("adding the access counts of %d items: %w", len(ids), err)
		}
		return nil
	})
}
