package sqlkit_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// items returns n items with ids i000, i001, ….
func items(n int) []*h4r.Item {
	out := make([]*h4r.Item, n)
	for i := range out {
		out[i] = &h4r.Item{ID: fmt.Sprintf("i%03d", i), Text: "t"}
	}
	return out
}

func TestEmbedAllBatches(t *testing.T) {
	tests := []struct {
		name         string
		items        int
		wantBatches  []int
		wantProgress []int
	}{
		{"no items", 0, []int{0}, []int{0}},
		{"less than a batch", 3, []int{3}, []int{3}},
		{"one full batch", sqlkit.VectorBatch, []int{sqlkit.VectorBatch, 0}, []int{sqlkit.VectorBatch, sqlkit.VectorBatch}},
		{"a batch and a rest", sqlkit.VectorBatch + 1, []int{sqlkit.VectorBatch, 1}, []int{sqlkit.VectorBatch, sqlkit.VectorBatch + 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			all := items(tc.items)
			each := func(_ context.Context, fn func(*h4r.Item) error) error {
				for _, it := range all {
					if err := fn(it); err != nil {
						return err
					}
				}
				return nil
			}
			var batches, progress []int
			write := func(_ context.Context, _ h4r.Embedder, b []*h4r.Item) error {
				batches = append(batches, len(b))
				return nil
			}
			done, err := sqlkit.EmbedAll(context.Background(), fixedEmbedder(nil), each, write, func(d int) { progress = append(progress, d) })
			if err != nil || done != tc.items {
				t.Fatalf("EmbedAll = %d, %v; want %d, nil", done, err, tc.items)
			}
			if !slices.Equal(batches, tc.wantBatches) || !slices.Equal(progress, tc.wantProgress) {
				t.Fatalf("batches %v, progress %v; want %v, %v", batches, progress, tc.wantBatches, tc.wantProgress)
			}
		})
	}
}

// unready is an embedder that has not learned yet.
type unready struct{ fixedEmbedder }

func (unready) Ready() bool { return false }

func TestEmbedMissingPages(t *testing.T) {
	all := items(5)
	// next serves two ids per page; the second page's item was deleted meanwhile.
	var afters []string
	next := func(_ context.Context, model, after string) (string, []*h4r.Item, error) {
		if model != "fixed" {
			t.Fatalf("next asked for model %q", model)
		}
		afters = append(afters, after)
		i := 0
		for i < len(all) && all[i].ID <= after {
			i++
		}
		page := all[i:min(i+2, len(all))]
		if len(page) == 0 {
			return "", nil, nil
		}
		found := page
		if i == 2 {
			found = page[1:]
		}
		return page[len(page)-1].ID, found, nil
	}
	var written []string
	write := func(_ context.Context, _ h4r.Embedder, b []*h4r.Item) error {
		for _, it := range b {
			written = append(written, it.ID)
		}
		return nil
	}
	n, err := sqlkit.EmbedMissing(context.Background(), fixedEmbedder(nil), next, write)
	if err != nil || n != 4 {
		t.Fatalf("EmbedMissing = %d, %v; want 4, nil", n, err)
	}
	if want := []string{"", "i001", "i003", "i004"}; !slices.Equal(afters, want) {
		t.Fatalf("pages read after %q, want %q", afters, want)
	}
	if want := []string{"i000", "i001", "i003", "i004"}; !slices.Equal(written, want) {
		t.Fatalf("wrote %q, want %q", written, want)
	}
	n, err = sqlkit.EmbedMissing(context.Background(), unready{}, next, write)
	if err != nil || n != 0 {
		t.Fatalf("EmbedMissing with an unready embedder = %d, %v; want 0, nil", n, err)
	}
}
