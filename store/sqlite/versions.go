package sqlite

import (
	"context"
	"fmt"
	"strings"
)

// ItemVersions returns the version of each of ids that exists; a missing
// id is absent from the map. It is one statement, for a check that what
// was read earlier is still current.
func (s *Store) ItemVersions(ctx context.Context, ids []string) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	// One statement reads one snapshot: no transaction around it.
	err := func() error {
		rows, err := s.readers.QueryContext(ctx, `SELECT id, version FROM items WHERE id IN (?`+strings.Repeat(`, ?`, len(ids)-1)+`)`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var version int
			if err := rows.Scan(&id, &version); err != nil {
				return err
			}
			out[id] = version
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, fmt.Errorf("reading the versions of %d items: %w", len(ids), err)
	}
	return out, nil
}
