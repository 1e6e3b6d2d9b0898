package postgres

import (
	"context"
	"fmt"
)

// DatabaseSize is the size on disk of what the store holds: the tables of
// its schema with their indexes and TOAST (pg_total_relation_size), in
// bytes: what GET /v1/stats reports. It is the schema's and not the
// database's, so that one tenant's figure does not grow with another
// tenant's schema in the same database.
func (s *Store) DatabaseSize(ctx context.Context) (int64, error) {
	var n int64
	err := s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `
			SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
			FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND c.relkind IN ('r', 'p', 'm')`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("reading the size of the store's schema: %w", explain(err))
	}
	return n, nil
}
