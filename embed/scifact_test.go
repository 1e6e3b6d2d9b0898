package embed_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/internal/datasets"
	"github.com/h4r/h4r/rank"
)

// runHits are one query's hits from each generator, computed once and
// fused many ways.
type runHits struct {
	query      bench.Query
	text, vecs []h4r.Hit
}

// BenchmarkSciFact measures the relevance signal on SciFact's 300 test
// queries (5,183 abstracts): full-text (FTS5 bm25) only, vectors (the
// built-in hashing embedder, exact search in the SQLite store) only, and
// both fused, relative and reciprocal-rank, at several vector weights,
// cosine floors and caps on the vector hits. Full-text returns its top 100,
// as in the engine; the ranking uses the relevance signal alone (the other
// signals are constant on BEIR documents). nDCG@10 and Recall@100 are
// reported per setting. Choose settings on the train split, report test:
//
//	H4R_BENCH_SPLIT=train go test ./embed -run '^$' -bench SciFact -benchtime 1x
//	go test ./embed -run '^$' -bench SciFact -benchtime 1x
func BenchmarkSciFact(b *testing.B) {
	split := os.Getenv("H4R_BENCH_SPLIT") // "train" to choose settings on, "test" (default) to report
	if split == "" {
		split = "test"
	}
	ds, err := bench.LoadBEIR(datasets.Dir(b, "scifact"), split)
	if err != nil {
		b.Fatal(err)
	}
	h := newHash(b)
	s := storeWithTB(b, h, ds.Items())
	fulltext := s.FullText()
	vectors, err := embed.NewGenerator(h, s, embed.WithMinScore(-1))
	if err != nil {
		b.Fatal(err)
	}
	var runs []runHits
	var textTook, vecTook time.Duration
	for _, q := range ds.Queries {
		sq := h4r.CandidateQuery{Text: q.Text, Limit: 100}
		t0 := time.Now()
		th, err := fulltext.Generate(b.Context(), sq)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		vh, err := vectors.Generate(b.Context(), sq)
		if err != nil {
			b.Fatal(err)
		}
		textTook, vecTook = textTook+t1.Sub(t0), vecTook+time.Since(t1)
		runs = append(runs, runHits{query: q, text: th, vecs: vh})
	}
	b.Logf("scifact %s: %d docs, %d queries; per query full-text %v, vector %v", split, len(ds.Docs), len(runs),
		textTook/time.Duration(len(runs)), vecTook/time.Duration(len(runs)))

	type setting struct {
		name   string
		fusion rank.Fusion
		text   bool
		vector bool
		floor  float64
		cap    int // most vector hits kept; 0: all 100
	}
	settings := []setting{
		{name: "fulltext_only", fusion: rank.Fusion{}, text: true},
		{name: "vector_only", fusion: rank.Fusion{}, vector: true, floor: -1},
	}
	for _, floor := range []float64{-1, embed.DefaultMinScore, 0.1, 0.2} {
		for _, method := range []string{rank.FusionRelative, rank.FusionRRF} {
			for _, w := range []float64{0.1, 0.2, 0.3, 0.4, 0.5} {
				settings = append(settings, setting{
					name:   fmt.Sprintf("%s_w%.1f_floor%.2f", method, w, floor),
					fusion: rank.Fusion{Method: method, Weights: map[string]float64{h4r.GenFullText: 1 - w, h4r.GenVector: w}},
					text:   true, vector: true, floor: floor,
				})
			}
		}
	}
	for _, c := range []int{10, 20, 50} {
		for _, w := range []float64{0.1, 0.2, 0.3} {
			settings = append(settings, setting{
				name:   fmt.Sprintf("relative_w%.1f_vectorcap%d", w, c),
				fusion: rank.Fusion{Method: rank.FusionRelative, Weights: map[string]float64{h4r.GenFullText: 1 - w, h4r.GenVector: w}},
				text:   true, vector: true, floor: embed.DefaultMinScore, cap: c,
			})
		}
	}
	var relevanceOnly h4r.Weights
	relevanceOnly[h4r.Relevance] = 1
	for _, st := range settings {
		b.Run(st.name, func(b *testing.B) {
			var ndcg, recall float64
			for b.Loop() {
				ndcg, recall = 0, 0
				for _, r := range runs {
					hits := map[string][]h4r.Hit{}
					var order []string
					if st.text {
						hits[h4r.GenFullText] = r.text
						order = append(order, h4r.GenFullText)
					}
					if st.vector {
						var kept []h4r.Hit
						for i, h := range r.vecs {
							if st.cap > 0 && i >= st.cap {
								break
							}
							if h.Score >= st.floor {
								kept = append(kept, h)
							}
						}
						hits[h4r.GenVector] = kept
						order = append(order, h4r.GenVector)
					}
					ranked, _ := rank.Rank(h4r.Merge(order, hits), rank.Options{Weights: relevanceOnly, Fusion: st.fusion, Now: time.Unix(0, 0)})
					ids := make([]string, len(ranked))
					for i, rk := range ranked {
						ids[i] = rk.Candidate.Item.ID
					}
					judged := ds.Qrels[r.query.ID]
					ndcg += bench.NDCG(ids, judged, 10)
					recall += bench.Recall(ids, judged, 100)
				}
				ndcg /= float64(len(runs))
				recall /= float64(len(runs))
			}
			b.ReportMetric(ndcg, "nDCG@10")
			b.ReportMetric(recall, "Recall@100")
		})
	}
}
