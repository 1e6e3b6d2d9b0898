package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/h4r/h4r"
)

// testEach checks that Each visits every item once, in id order, across
// page boundaries, with the stored fields, and stops at fn's error.
func (s *suite) testEach(t *testing.T) {
	ctx := context.Background()
	st := s.open(t)
	const n = 1234 // more than one page of any sane page size
	items := make([]h4r.Item, n)
	for i := range items {
		items[i] = h4r.Item{ID: fmt.Sprintf("each-%05d", n-i), Text: fmt.Sprintf("item number %d", i),
			Links: []h4r.Link{{Type: "follows", Target: "each-00001"}}}
	}
	if _, err := st.Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	var ids []string
	err := st.Each(ctx, func(it *h4r.Item) error {
		ids = append(ids, it.ID)
		if it.Metadata.Version != 1 || it.Metadata.Tokens == 0 || len(it.Links) != 1 {
			return fmt.Errorf("%s: version %d, tokens %d, %d links: stored fields missing", it.ID, it.Metadata.Version, it.Metadata.Tokens, len(it.Links))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != n {
		t.Fatalf("Each visited %d items (sorted %v), want %d distinct in id order", len(ids), slices.IsSorted(ids), n)
	}

	stop := errors.New("stop here")
	visited := 0
	err = st.Each(ctx, func(*h4r.Item) error {
		visited++
		if visited == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || visited != 3 {
		t.Errorf("Each returned %v after %d visits, want fn's error after 3", err, visited)
	}
}
