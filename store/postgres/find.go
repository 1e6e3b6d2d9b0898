package postgres

import (
	"context"
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
	if m := q.Linked; m != nil && strings.ContainsRune(m.Target+m.TargetType, 0) {
		return nil, nil // Postgres text cannot hold NUL, so no link names it
	}
	p := &params{}
	var sb strings.Builder
	sb.WriteString(`SELECT ` + itemColumns + ` FROM items i WHERE true`)
	if m := q.Linked; m != nil {
		sb.WriteString(` AND i.id IN (SELECT l.source FROM links l WHERE l.target = ` + p.add(m.Target))
		if m.TargetType != "" {
			sb.WriteString(` AND l.target_type = ` + p.add(m.TargetType))
		}
		if len(m.Types) > 0 {
			sb.WriteString(` AND l.type = ANY(` + p.add(m.Types) + `::text[])`)
		}
		sb.WriteString(`)`)
	}
	where, err := whereFilters(q.Filters, p)
	if err != nil {
		return nil, err
	}
	sb.WriteString(where)
	sb.WriteString(` ORDER BY i.created_at DESC, i.id DESC LIMIT ` + p.add(limit))
	var items []*h4r.Item
	err = s.read(ctx, func(ctx context.Context) error {
		var err error
		items, err = s.queryItems(ctx, sb.String(), p.args, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("finding items: %w", err)
	}
	return items, nil
}
