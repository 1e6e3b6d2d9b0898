package embed_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
)

// relearning is an embedder whose model changes in place; the first Embed
// switches it to the next model once it has computed its vectors, where a
// learning that finishes at that moment lands.
type relearning struct{ cur atomic.Int32 }

func (r *relearning) Model() string { return axisModel{r, int(r.cur.Load())}.Model() }

func (r *relearning) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return axisModel{r, int(r.cur.Load())}.Embed(ctx, texts)
}

func (r *relearning) Pin() h4r.Embedder { return axisModel{r, int(r.cur.Load())} }

// axisModel puts every text on axis i, so a vector shows its model.
type axisModel struct {
	r *relearning
	i int
}

func (m axisModel) Model() string { return []string{"axis-0", "axis-1"}[m.i] }

func (m axisModel) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for k := range out {
		out[k] = make([]float32, 2)
		out[k][m.i] = 1
	}
	m.r.cur.CompareAndSwap(0, 1)
	return out, nil
}

// recordingIndex records the model and vector it is asked to search.
type recordingIndex struct {
	model  string
	vector []float32
}

func (x *recordingIndex) SearchVectors(_ context.Context, model string, vector []float32, _ h4r.Filters, _ int, _ float64) ([]h4r.Hit, error) {
	x.model, x.vector = model, vector
	return nil, nil
}

// The vector generator searches the vectors of the model that embedded
// the query, even when the embedder learns a new one in between, bare or
// behind the cache.
func TestGeneratorNamesTheModelThatEmbedded(t *testing.T) {
	tests := []struct {
		name  string
		cache int
	}{{"bare", 0}, {"cached", 8}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &relearning{}
			e, err := embed.NewCache(r, tt.cache)
			if err != nil {
				t.Fatal(err)
			}
			ix := &recordingIndex{}
			g, err := embed.NewGenerator(e, ix)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Generate(t.Context(), h4r.CandidateQuery{Text: "car"}); err != nil {
				t.Fatal(err)
			}
			if r.Model() != "axis-1" {
				t.Fatalf("model after the query = %s; the embedder should have switched to axis-1", r.Model())
			}
			if ix.model != "axis-0" || len(ix.vector) != 2 || ix.vector[0] != 1 {
				t.Errorf("searched model %s with vector %v; want axis-0 with [1 0], the model that embedded the query", ix.model, ix.vector)
			}
			// The cache keeps the vector under the model that computed it:
			// the same query with axis-1 is embedded by axis-1.
			if _, err := g.Generate(t.Context(), h4r.CandidateQuery{Text: "car"}); err != nil {
				t.Fatal(err)
			}
			if ix.model != "axis-1" || ix.vector[1] != 1 {
				t.Errorf("second query searched model %s with vector %v; want axis-1 with [0 1]", ix.model, ix.vector)
			}
		})
	}
}
