package postgres

import (
	"context"
	"fmt"
)

// DatabaseSize is the size on disk of the database the store is in
// (pg_database_size), in bytes: what GET /v1/stats reports.
func (s *Store) DatabaseSize(ctx context.Context) (int64, error) {
	var n int64
	err := s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("reading the database size: %w", explain(err))
	}
	return n, nil
}
