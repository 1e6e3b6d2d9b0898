package sqlkit

import (
	"context"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/vecindex"
)

// Hydrate reads the items of the ranked vectors top with read and returns
// them as hits, keeping top's order and scores. An item deleted since its
// vector was ranked (read does not return it) is left out.
func Hydrate(ctx context.Context, top []vecindex.Scored, read func(ctx context.Context, ids []string) (map[string]*h4r.Item, error)) ([]h4r.Hit, error) {
	if len(top) == 0 {
		return nil, nil
	}
	ids := make([]string, len(top))
	for i, t := range top {
		ids[i] = t.ID
	}
	byID, err := read(ctx, ids)
	if err != nil {
		return nil, err
	}
	hits := make([]h4r.Hit, 0, len(top))
	for _, t := range top {
		if it := byID[t.ID]; it != nil {
			hits = append(hits, h4r.Hit{Item: it, Score: t.Score})
		}
	}
	return hits, nil
}
