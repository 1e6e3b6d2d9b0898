package storetest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/h4r/h4r"
)

// VectorStore is a store that embeds the items it writes and keeps their
// vectors (store/sqlite, store/postgres).
type VectorStore interface {
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	SearchVectors(ctx context.Context, model string, vector []float32, filters h4r.Filters, limit int, minScore float64) ([]h4r.Hit, error)
	MissingVectors(ctx context.Context, model string) (int, error)
	EmbedMissingVectors(ctx context.Context) (int, error)
}

// Relearning is an embedder whose model changes in place, as the learned
// embedder's does when it learns again. Each model puts every text on an
// axis of its own, so that a vector shows which model computed it.
// Between computing a write's vectors and returning them, it runs a hook
// once: where a learning that finishes at that moment lands.
type Relearning struct {
	cur   atomic.Pointer[axisModel]
	armed atomic.Bool
}

// NewRelearning returns an embedder holding the model "axis-0".
func NewRelearning() *Relearning {
	r := &Relearning{}
	r.cur.Store(&axisModel{r: r, axis: 0})
	return r
}

// RelearnDuringNextEmbed makes the next Embed switch to the model "axis-1"
// once it has computed its vectors with the current one.
func (r *Relearning) RelearnDuringNextEmbed() { r.armed.Store(true) }

// Model names the current model.
func (r *Relearning) Model() string { return r.cur.Load().Model() }

// Embed embeds with the current model.
func (r *Relearning) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return r.cur.Load().Embed(ctx, texts)
}

// Pin returns the current model alone (h4r.PinEmbedder).
func (r *Relearning) Pin() h4r.Embedder { return r.cur.Load() }

// axisModel is one model of Relearning.
type axisModel struct {
	r    *Relearning
	axis int
}

func (m *axisModel) Model() string { return "axis-" + string(rune('0'+m.axis)) }

func (m *axisModel) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = axis(m.axis)
	}
	if m.r.armed.CompareAndSwap(true, false) {
		m.r.cur.Store(&axisModel{r: m.r, axis: 1})
	}
	return out, nil
}

func axis(i int) []float32 {
	v := make([]float32, 4)
	v[i] = 1
	return v
}

// RelearnDuringWrite checks that a write whose embedding races a learning
// stores its vector under the model that computed it, never under the
// model learned meanwhile, and that EmbedMissingVectors then gives the item
// a vector of the new model. open returns an empty store that embeds with
// e.
func RelearnDuringWrite(t *testing.T, open func(t *testing.T, e h4r.Embedder) VectorStore) {
	e := NewRelearning()
	s := open(t, e)
	ctx := t.Context()
	if _, err := s.Upsert(ctx, []h4r.Item{{ID: "before", Kind: "note", Text: "written before the learning"}}); err != nil {
		t.Fatal(err)
	}
	e.RelearnDuringNextEmbed()
	if _, err := s.Upsert(ctx, []h4r.Item{{ID: "racing", Kind: "note", Text: "embedded as the learning finishes"}}); err != nil {
		t.Fatal(err)
	}
	if got := e.Model(); got != "axis-1" {
		t.Fatalf("model after the write = %s; the hook should have switched it to axis-1", got)
	}
	found := func(model string, axisOf int) map[string]bool {
		t.Helper()
		hits, err := s.SearchVectors(ctx, model, axis(axisOf), h4r.Filters{}, 10, 0.5)
		if err != nil {
			t.Fatalf("SearchVectors(%s): %v", model, err)
		}
		out := map[string]bool{}
		for _, h := range hits {
			out[h.Item.ID] = true
		}
		return out
	}
	if got := found("axis-0", 0); !got["racing"] || !got["before"] {
		t.Errorf("vectors of axis-0 near its axis = %v; want before and racing (racing was computed with axis-0)", got)
	}
	// The learner points the store's index at the new model before it
	// re-embeds (the Postgres store's UseVectorModel).
	if u, ok := s.(interface {
		UseVectorModel(ctx context.Context, model string) error
	}); ok {
		if err := u.UseVectorModel(ctx, "axis-1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := found("axis-1", 1); len(got) != 0 {
		t.Errorf("vectors of axis-1 near its axis before the sweep = %v; want none", got)
	}
	if n, err := s.MissingVectors(ctx, "axis-1"); err != nil || n != 2 {
		t.Errorf("MissingVectors(axis-1) = %d, %v; want 2", n, err)
	}
	if n, err := s.EmbedMissingVectors(ctx); err != nil || n != 2 {
		t.Fatalf("EmbedMissingVectors = %d, %v; want 2", n, err)
	}
	if got := found("axis-1", 1); !got["racing"] || !got["before"] {
		t.Errorf("vectors of axis-1 after the sweep = %v; want before and racing", got)
	}
	if n, err := s.EmbedMissingVectors(ctx); err != nil || n != 0 {
		t.Errorf("EmbedMissingVectors again = %d, %v; want 0", n, err)
	}
}
