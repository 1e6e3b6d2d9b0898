package embed_test

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/internal/datasets"
)

// float32Index is the reference the compact store is measured against: an
// exhaustive float32 scan of the same vectors (the store's search before it
// kept int8 codes in memory).
type float32Index struct {
	ids   []string
	vecs  [][]float32
	items map[string]*h4r.Item
}

func (f *float32Index) SearchVectors(_ context.Context, _ string, q []float32, _ h4r.Filters, limit int, minScore float64) ([]h4r.Hit, error) {
	hits := make([]h4r.Hit, 0, len(f.ids))
	for i, v := range f.vecs {
		var s float32
		for j := range q {
			s += q[j] * v[j]
		}
		if float64(s) >= minScore {
			hits = append(hits, h4r.Hit{Item: f.items[f.ids[i]], Score: float64(s)})
		}
	}
	slices.SortFunc(hits, func(a, b h4r.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Item.ID, b.Item.ID)
	})
	return hits[:min(limit, len(hits))], nil
}

// The store keeps vectors as int8 codes in memory and rescores its best
// candidates with the float32 vectors: the vector generator's Recall@100
// on scifact's test queries (built-in embedder, default floor) must stay
// within 0.005 of an exhaustive float32 scan of the same vectors, and its
// top 100 must be nearly the exact top 100.
func TestCompactVectorRecallSciFact(t *testing.T) {
	if testing.Short() {
		t.Skip("embeds 5,183 abstracts")
	}
	ds, err := bench.LoadBEIR(datasets.Dir(t, "scifact"), "test")
	if err != nil {
		t.Fatal(err)
	}
	h := newHash(t)
	items := ds.Items()
	s := storeWithTB(t, h, items)
	ref := &float32Index{items: map[string]*h4r.Item{}}
	for i := range items {
		vecs, err := h.Embed(t.Context(), []string{items[i].Text})
		if err != nil {
			t.Fatal(err)
		}
		ref.ids = append(ref.ids, items[i].ID)
		ref.vecs = append(ref.vecs, vecs[0])
		ref.items[items[i].ID] = &items[i]
	}
	compact, err := embed.NewGenerator(h, s, embed.WithMaxHits(100))
	if err != nil {
		t.Fatal(err)
	}
	exact, err := embed.NewGenerator(h, ref, embed.WithMaxHits(100))
	if err != nil {
		t.Fatal(err)
	}
	var recallCompact, recallExact, overlap float64
	for _, q := range ds.Queries {
		cq := h4r.CandidateQuery{Text: q.Text, Limit: 100}
		ch, err := compact.Generate(t.Context(), cq)
		if err != nil {
			t.Fatal(err)
		}
		eh, err := exact.Generate(t.Context(), cq)
		if err != nil {
			t.Fatal(err)
		}
		cids, eids := hitIDs(ch), hitIDs(eh)
		recallCompact += bench.Recall(cids, ds.Qrels[q.ID], 100)
		recallExact += bench.Recall(eids, ds.Qrels[q.ID], 100)
		inExact := map[string]bool{}
		for _, id := range eids {
			inExact[id] = true
		}
		same := 0
		for _, id := range cids {
			if inExact[id] {
				same++
			}
		}
		if len(eids) > 0 {
			overlap += float64(same) / float64(len(eids))
		}
	}
	n := float64(len(ds.Queries))
	recallCompact, recallExact, overlap = recallCompact/n, recallExact/n, overlap/n
	t.Logf("scifact test, %d queries: Recall@100 compact %.4f, float32 %.4f; top-100 overlap with exact %.4f", len(ds.Queries), recallCompact, recallExact, overlap)
	if recallCompact < recallExact-0.005 {
		t.Errorf("Recall@100 %.4f, float32 scan %.4f: more than 0.005 lower", recallCompact, recallExact)
	}
	if overlap < 0.99 {
		t.Errorf("the compact top 100 shares %.4f of the exact top 100, want at least 0.99", overlap)
	}
}
