package embed_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
)

func TestRocchio(t *testing.T) {
	q := []float32{1, 0, 0}
	tests := []struct {
		name   string
		near   [][]float32
		weight float64
		want   []float32
	}{
		{"no weight keeps the query", [][]float32{{0, 1, 0}}, 0, q},
		{"no feedback keeps the query", nil, 0.5, q},
		{"zero vectors lend nothing", [][]float32{{0, 0, 0}}, 0.5, q},
		{"vectors of another length lend nothing", [][]float32{{0, 1}}, 0.5, q},
		{"half way to one vector", [][]float32{{0, 1, 0}}, 0.5, []float32{float32(math.Sqrt2 / 2), float32(math.Sqrt2 / 2), 0}},
		{"toward the mean of two", [][]float32{{0, 1, 0}, {0, 0, 1}, {0, 0, 0}}, 0.5, []float32{float32(2 / math.Sqrt(6)), float32(1 / math.Sqrt(6)), float32(1 / math.Sqrt(6))}},
		{"all the way", [][]float32{{0, 1, 0}}, 1, []float32{0, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := embed.Rocchio(q, tt.near, tt.weight)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if math.Abs(float64(got[i]-tt.want[i])) > 1e-6 {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
			if n := norm(got); math.Abs(n-1) > 1e-6 {
				t.Errorf("norm %v, want 1", n)
			}
		})
	}
}

// capturingIndex answers every search with its hits and remembers the
// vector it was asked with.
type capturingIndex struct {
	hits   []h4r.Hit
	vector []float32
	limit  int
}

func (ix *capturingIndex) SearchVectors(_ context.Context, _ string, v []float32, _ h4r.Filters, limit int, _ float64) ([]h4r.Hit, error) {
	ix.vector, ix.limit = slices.Clone(v), limit
	return ix.hits, nil
}

func TestGenerateNear(t *testing.T) {
	h, err := embed.NewHash(embed.WithHashDim(64))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := embed.NewCache(h, 16)
	if err != nil {
		t.Fatal(err)
	}
	ix := &capturingIndex{hits: []h4r.Hit{{Item: &h4r.Item{ID: "a"}, Score: 0.5}}}
	g, err := embed.NewGenerator(cache, ix, embed.WithMaxHits(7))
	if err != nil {
		t.Fatal(err)
	}
	q := h4r.CandidateQuery{Text: "login selector failure", Limit: 100}
	texts := []string{"payment gateway timeout", "checkout page payment"}
	hits, err := g.GenerateNear(t.Context(), q, texts, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Item.ID != "a" {
		t.Errorf("hits %v, want the index's", hitIDs(hits))
	}
	vecs, err := h.Embed(t.Context(), append([]string{q.Text}, texts...))
	if err != nil {
		t.Fatal(err)
	}
	want := embed.Rocchio(vecs[0], vecs[1:], 0.25)
	if !slices.Equal(ix.vector, want) {
		t.Errorf("searched with %v, want the query moved toward the texts %v", ix.vector, want)
	}
	if slices.Equal(ix.vector, vecs[0]) {
		t.Error("searched with the query's own vector")
	}
	if ix.limit != 7 {
		t.Errorf("limit %d, want the generator's cap 7", ix.limit)
	}
	if n := cache.(*embed.Cache).Len(); n != 1 {
		t.Errorf("the query cache holds %d entries, want the query's alone", n)
	}
}
