package sqlite

import (
	"context"
	"database/sql"
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
	where, args, err := whereFilters(filters)
	if err != nil {
		return nil, err
	}
	var items []*h4r.Item
	err = s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		items, err = queryItems(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE 1 = 1`+where+
			` ORDER BY i.created_at DESC, i.id DESC LIMIT ?`, append(args, limit), nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing items by filter: %w", err)
	}
	return items, nil
}
