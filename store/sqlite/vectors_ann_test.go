package sqlite_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/store/sqlite"
)

// Above WithVectorANNThreshold the store searches the inverted file: its
// hits, filtered or not, are nearly those of a store that scans every
// vector, and an item's new text and its deletion are reflected at once.
func TestSearchVectorsAboveANNThreshold(t *testing.T) {
	e := hashEmbedder(t, embed.WithHashDim(64))
	ann := openAt(t, filepath.Join(t.TempDir(), "ann.db"), sqlite.WithVectors(e), sqlite.WithVectorANNThreshold(200))
	exact := openAt(t, filepath.Join(t.TempDir(), "exact.db"), sqlite.WithVectors(e), sqlite.WithVectorANNThreshold(0))
	c := newCorpus(5)
	items := c.items("it", 600, false)
	for i := range items {
		items[i].Kind = []string{"common", "common", "common", "uncommon", "rare"}[i%5]
	}
	for _, s := range []*sqlite.Store{ann, exact} {
		if _, err := s.Upsert(t.Context(), items); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		filters h4r.Filters
	}{
		{"unfiltered", h4r.Filters{}},
		{"most_pass", h4r.Filters{Kinds: []string{"common"}}},
		{"a_fifth_pass", h4r.Filters{Kinds: []string{"rare"}}},
		{"none_pass", h4r.Filters{Kinds: []string{"absent"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var same, total int
			for range 10 {
				q := c.words(5)
				got := ids(search(t, ann, e, q, tc.filters, 20, -1))
				want := ids(search(t, exact, e, q, tc.filters, 20, -1))
				total += len(want)
				for _, id := range got {
					if slices.Contains(want, id) {
						same++
					}
				}
				if len(got) != len(want) {
					t.Errorf("query %q: %d hits, exact scan %d", q, len(got), len(want))
				}
			}
			if total > 0 && float64(same)/float64(total) < 0.95 {
				t.Errorf("the hits share %d of the exact scan's %d, want at least 95%%", same, total)
			}
		})
	}
	const q = "payment gateway timeout during checkout"
	if _, err := ann.Upsert(t.Context(), []h4r.Item{{ID: items[7].ID, Kind: "note", Text: q}}); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, ann, e, q, h4r.Filters{}, 1, 0)); !slices.Equal(got, []string{items[7].ID}) {
		t.Fatalf("after an update, the new text finds %v", got)
	}
	if err := ann.Delete(t.Context(), items[7].ID); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, ann, e, q, h4r.Filters{}, 10, 0)); slices.Contains(got, items[7].ID) {
		t.Errorf("after delete, search still finds it: %v", got)
	}
}
