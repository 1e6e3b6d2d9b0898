package sqlkit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/vecindex"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

func TestHydrateKeepsOrderAndLeavesOutDeleted(t *testing.T) {
	stored := map[string]*h4r.Item{"a": {ID: "a"}, "c": {ID: "c"}}
	read := func(_ context.Context, ids []string) (map[string]*h4r.Item, error) {
		out := map[string]*h4r.Item{}
		for _, id := range ids {
			if it := stored[id]; it != nil {
				out[id] = it
			}
		}
		return out, nil
	}
	top := []vecindex.Scored{{ID: "c", Score: 0.9}, {ID: "b", Score: 0.8}, {ID: "a", Score: 0.7}}
	hits, err := sqlkit.Hydrate(context.Background(), top, read)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Item.ID != "c" || hits[0].Score != 0.9 || hits[1].Item.ID != "a" || hits[1].Score != 0.7 {
		t.Fatalf("Hydrate = %+v; want c (0.9) then a (0.7)", hits)
	}
	boom := errors.New("boom")
	if _, err := sqlkit.Hydrate(context.Background(), top, func(context.Context, []string) (map[string]*h4r.Item, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Hydrate with a failing read = %v; want %v", err, boom)
	}
}
