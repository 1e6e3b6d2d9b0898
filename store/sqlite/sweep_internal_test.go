package sqlite

import (
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// TestEmbedMissingVectorsSkipsWhenNothingChanged: the search for items
// without a vector runs again only after something that could leave one
// without: an item written, a vector deleted, a new model; never after
// access counts alone. Each step says whether a search runs and how many
// items it embeds.
func TestEmbedMissingVectorsSkipsWhenNothingChanged(t *testing.T) {
	s, _, _ := newHashVectorStore(t)
	ctx := t.Context()
	if _, err := s.Upsert(ctx, warmItems(20, "v1")); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name     string
		do       func(t *testing.T)
		searches int64 // searches made by this step's EmbedMissingVectors
		embedded int
	}{
		{"first: every item has its vector", nil, 1, 0},
		{"nothing changed", nil, 0, 0},
		{"access counts written", func(t *testing.T) {
			s.RecordAccess([]string{"w0001", "w0002"})
			if err := s.flushAccess(ctx, map[string]sqlkit.AccessPending{"w0001": {Count: 3, Last: time.Now()}}); err != nil {
				t.Fatal(err)
			}
		}, 0, 0},
		{"a vector deleted", func(t *testing.T) {
			if _, err := s.writer.ExecContext(ctx, `DELETE FROM item_vectors WHERE item_id = 'w0003'`); err != nil {
				t.Fatal(err)
			}
		}, 1, 1},
		{"its own write confirmed", nil, 1, 0},
		{"nothing changed since", nil, 0, 0},
		{"an item written", func(t *testing.T) {
			if _, err := s.Upsert(ctx, []h4r.Item{{ID: "new", Kind: "note", Text: "a new note"}}); err != nil {
				t.Fatal(err)
			}
		}, 1, 0},
		{"still nothing", nil, 0, 0},
	} {
		if step.do != nil {
			step.do(t)
		}
		before := s.sweeps.Load()
		n, err := s.EmbedMissingVectors(ctx)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := s.sweeps.Load() - before; got != step.searches || n != step.embedded {
			t.Errorf("%s: %d searches embedding %d items, want %d embedding %d", step.name, got, n, step.searches, step.embedded)
		}
	}
}
