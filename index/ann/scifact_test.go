package ann_test

import (
	"context"
	"testing"

	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/vecindex"
	"github.com/h4r/h4r/internal/datasets"
)

// On scifact's vectors, as the stores compute them with each built-in
// embedder (the hashing one: embed TestCompactVectorRecallSciFact; the
// learned one, learned from the abstracts as a server learns its corpus),
// with the index forced to cluster its 5,183 abstracts, the rescored top
// 100 of each test query shares at least 0.95 of the exact float32 top 100
// at the probes the index calibrated itself.
func TestRecallSciFact(t *testing.T) {
	if testing.Short() {
		t.Skip("embeds 5,183 abstracts")
	}
	ds, err := bench.LoadBEIR(datasets.Dir(t, "scifact"), "test")
	if err != nil {
		t.Fatal(err)
	}
	items := ds.Items()
	texts := make([]string, len(items))
	for i := range items {
		texts[i] = items[i].Text
	}
	for _, tc := range []struct {
		name     string
		embedder func(t *testing.T) embed.Embedder
	}{
		{"hash", func(t *testing.T) embed.Embedder {
			h, err := embed.NewHash()
			if err != nil {
				t.Fatal(err)
			}
			return h
		}},
		{"learned", func(t *testing.T) embed.Embedder {
			m, err := embed.Learn(t.Context(), func(_ context.Context, fn func(string) error) error {
				for _, s := range texts {
					if err := fn(s); err != nil {
						return err
					}
				}
				return nil
			}, len(texts))
			if err != nil {
				t.Fatal(err)
			}
			return embed.NewLearned(m, m.Dim())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.embedder(t)
			vecs, err := e.Embed(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			exact := map[string][]float32{}
			x := ann.New(ann.WithThreshold(1000))
			for i, it := range items {
				x.Put(it.ID, vecs[i])
				exact[it.ID] = vecs[i]
			}
			if !x.Approximate() {
				t.Fatal("the index did not cluster above its threshold")
			}
			queries := make([][]float32, 0, len(ds.Queries))
			for _, q := range ds.Queries {
				v, err := e.Embed(t.Context(), []string{q.Text})
				if err != nil {
					t.Fatal(err)
				}
				queries = append(queries, v[0])
			}
			// The calibrated probes are asserted; others measured
			// (PERFORMANCE.md).
			calibrated := x.Probes()
			for _, probes := range []int{calibrated, 48, 32, 16, 8} {
				x.SetProbes(probes)
				var recall float64
				scanned := 0
				for _, q := range queries {
					recall += overlap(searchTop(x, q, exact, 100), exactTop(q, exact, 100))
					ids, _, _, _ := x.Search(q, vecindex.Candidates(100))
					scanned += len(ids)
				}
				recall /= float64(len(queries))
				t.Logf("%d queries, %d vectors of %d dimensions in %d lists, %d probes: recall@100 %.4f, scanning %.1f%% of the vectors",
					len(queries), x.Len(), x.Dim(), x.Lists(), probes, recall, 100*float64(scanned)/float64(len(queries)*x.Len()))
				if probes == calibrated && recall < 0.95 {
					t.Errorf("recall@100 %.4f at the calibrated probes, want ≥ 0.95", recall)
				}
			}
		})
	}
}
