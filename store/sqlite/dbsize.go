package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// DatabaseSize is the size of the database file in bytes (pages times
// page size): what GET /v1/stats reports.
func (s *Store) DatabaseSize(ctx context.Context) (int64, error) {
	var n int64
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("reading the database size: %w", err)
	}
	return n, nil
}
