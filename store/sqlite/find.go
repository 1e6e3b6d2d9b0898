package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/h4r/h4r"
)

// Find lists the items q selects, newest first (h4r.ItemQuery): the read
// of items by filter alone (memory.read lists a scope with it), or by a
// link they hold. The caller passes what it returns through the policy
// slicer. A link
// match is a semi-join on the links table, served by links_target_type
// when it names types and by links_target otherwise.
func (s *Store) Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error) {
	limit, err := q.FindLimit()
	if err != nil {
		return nil, err
	}
	where, args, err := whereFilters(q.Filters)
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	sb.WriteString(`SELECT ` + itemColumns + ` FROM items i WHERE 1`)
	var linkArgs []any
	if m := q.Linked; m != nil {
		sb.WriteString(` AND i.id IN (SELECT l.source FROM links l WHERE l.target = ?`)
		linkArgs = append(linkArgs, m.Target)
		if m.TargetType != "" {
			sb.WriteString(` AND l.target_type = ?`)
			linkArgs = append(linkArgs, m.TargetType)
		}
		if len(m.Types) > 0 {
			list, err := jsonList(m.Types)
			if err != nil {
				return nil, err
			}
			sb.WriteString(` AND l.type IN (SELECT value FROM json_each(?))`)
			linkArgs = append(linkArgs, list)
		}
		sb.WriteString(`)`)
	}
	sb.WriteString(where)
	sb.WriteString(` ORDER BY i.created_at DESC, i.id DESC LIMIT ?`)
	all := append(append(linkArgs, args...), limit)
	var items []*h4r.Item
	err = s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		items, err = queryItems(ctx, tx, sb.String(), all, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("finding items: %w", err)
	}
	return items, nil
}
