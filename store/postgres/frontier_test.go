package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// A walk cut short (its deadline passes between its queries) must not
// leave its connection inside the walk's snapshot: with one connection in
// the pool, the next walk would then read the old snapshot and miss what
// was written since.
func TestCutWalkLeavesNoSnapshotBehind(t *testing.T) {
	s := newStore(t, WithMaxReadConns(1))
	ctx := t.Context()
	items := []h4r.Item{{ID: "a", Kind: "event", Text: "a"}}
	for i := range 50 {
		items = append(items, h4r.Item{ID: fmt.Sprint("n", i), Kind: "event", Text: "n",
			Links: []h4r.Link{{Type: "caused_by", Target: "a"}, {Type: "caused_by", Target: fmt.Sprint("n", (i+1)%50)}}})
	}
	if _, err := s.Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	q := h4r.CandidateQuery{Anchors: []string{"a"}, MaxHops: 3}
	cut := 0
	for i := range 60 {
		cctx, cancel := context.WithTimeout(ctx, time.Duration(100+i*100)*time.Microsecond)
		if _, err := s.Graph().Generate(cctx, q); err != nil {
			cut++
		}
		cancel()
	}
	if cut == 0 {
		t.Log("no walk was cut short; the check below still holds")
	}
	if _, err := s.Upsert(ctx, []h4r.Item{{ID: "late", Kind: "event", Text: "late",
		Links: []h4r.Link{{Type: "caused_by", Target: "a"}}}}); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Graph().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"a"}, MaxHops: 1, Targets: []string{"late"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Item.ID != "late" || hits[0].Distance != 1 {
		t.Errorf("after %d cut walks, the walk found %v, want late at 1", cut, hits)
	}
}
