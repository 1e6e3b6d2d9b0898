package postgres

import (
	"context"
	"fmt"

	"github.com/h4r/h4r"
)

// List returns at most limit items that pass filters, newest first
// (created_at, then id, both descending): the read of items by filter
// alone, without a query text, that memory.read uses to list a scope.
// The caller passes what it returns through the policy slicer.
func (s *Store) List(ctx context.Context, filters h4r.Filters, limit int) ([]*h4r.Item, error) {
	if limit <= 0 {
		return nil, h4r.Errorf(h4r.EINVALID, "limit", "limit must be > 0, got %d", limit)
	}
	var p params
	where, err := whereFilters(filters, &p)
	if err != nil {
		return nil, err
	}
	query := `SELECT ` + itemColumns + ` FROM items i WHERE true` + where +
		` ORDER BY i.created_at DESC, i.id DESC LIMIT ` + p.add(limit)
	var items []*h4r.Item
	err = s.read(ctx, func(ctx context.Context) error {
		var err error
		items, err = s.queryItems(ctx, query, p.args, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing items by filter: %w", err)
	}
	return items, nil
}
