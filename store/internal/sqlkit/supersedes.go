package sqlkit

import (
	"context"
	"fmt"

	"github.com/h4r/h4r"
)

// BadSupersedes is the first supersedes link a check refused.
type BadSupersedes struct {
	Source, Target string
	Position       int
	Cycle          bool
}

// SupersedesRow runs one check of supersedes links, the query given in the
// store's dialect, and scans its first row into p (Source, Position,
// Target); found is false when the check returned no row.
type SupersedesRow func(ctx context.Context, query string, p *BadSupersedes) (found bool, err error)

// SupersedesProblem runs the two checks of the supersedes links held by
// ids, in order: missingSQL finds the first link whose target is no item,
// cycleSQL the first that lies on a cycle of supersedes links. It returns
// the first link either refused, nil when none did or ids is empty.
func SupersedesProblem(ctx context.Context, ids []string, missingSQL, cycleSQL string, row SupersedesRow) (*BadSupersedes, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	for _, q := range []struct {
		sql   string
		cycle bool
	}{{missingSQL, false}, {cycleSQL, true}} {
		p := BadSupersedes{Cycle: q.cycle}
		found, err := row(ctx, q.sql, &p)
		if err != nil {
			return nil, fmt.Errorf("checking the supersedes links of %d items: %w", len(ids), err)
		}
		if found {
			return &p, nil
		}
	}
	return nil, nil
}

// CheckSupersedes refuses a batch when one of its items supersedes an
// item that does not exist, or one that supersedes it in turn: an
// *h4r.Error naming items[i].links[j].target. problem checks the links of
// the items that hold supersedes links (SupersedesProblem in the store's
// write transaction, after the batch's links are written).
func CheckSupersedes(items []h4r.Item, problem func(ids []string) (*BadSupersedes, error)) error {
	var ids []string
	for i := range items {
		if len(items[i].Supersedes()) > 0 {
			ids = append(ids, items[i].ID)
		}
	}
	p, err := problem(ids)
	if err != nil || p == nil {
		return err
	}
	return h4r.SupersedesError(items, p.Source, p.Position, p.Target, p.Cycle)
}
