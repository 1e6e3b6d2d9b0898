package bm25_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/index/bm25"
	"github.com/h4r/h4r/internal/datasets"
)

// The labelled collections of shared/datasets (see its README).
var collections = []string{"scifact", "cisi", "cranfield"}

// collection is a BEIR collection loaded into an index: document i is the
// dataset's i-th item (title and text, as bench indexes them).
type collection struct {
	ds      *bench.Dataset
	x       *bm25.Index
	ids     []string // index id → document id
	queries []string // every query of queries.jsonl, judged or not
}

func loadCollection(tb testing.TB, name string) *collection {
	tb.Helper()
	dir := datasets.Dir(tb, name)
	ds, err := bench.LoadBEIR(dir, "test")
	if err != nil {
		tb.Fatal(err)
	}
	c := &collection{ds: ds, x: bm25.New()}
	for i, it := range ds.Items() {
		if err := c.x.Add(uint32(i), it.Text); err != nil {
			tb.Fatal(err)
		}
		c.ids = append(c.ids, it.ID)
	}
	f, err := os.Open(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var q struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			tb.Fatalf("reading %s queries: %v", name, err)
		}
		c.queries = append(c.queries, q.Text)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return c
}

// tie orders documents of equal score by document id, as the store orders
// its hits by item id.
func (c *collection) tie(a, b uint32) int { return strings.Compare(c.ids[a], c.ids[b]) }

// queryAnalysis is what the stores ask of the index by default: the
// English stop words left out, query-term frequency, analysis's caps.
var queryAnalysis = analysis.Default()

// TestCollectionsEqualReference checks the pruned top 100 against the
// exhaustive reference on every query of the three collections: as the
// stores ask (stop words out, query-term frequency), with every word kept
// (stop words make long, flat queries, the hardest for pruning), and with
// a filter that rejects one document in three.
func TestCollectionsEqualReference(t *testing.T) {
	for _, name := range collections {
		t.Run(name, func(t *testing.T) {
			c := loadCollection(t, name)
			for _, mode := range []struct {
				name   string
				q      *analysis.Analyzer
				accept func(uint32) bool
			}{
				{"stop words out", queryAnalysis, nil},
				{"every word", analysis.New(nil), nil},
				{"filtered", queryAnalysis, func(id uint32) bool { return id%3 != 0 }},
			} {
				t.Run(mode.name, func(t *testing.T) {
					opts := make([]bm25.SearchOptions, len(algorithms))
					for i, a := range algorithms {
						opts[i] = bm25.SearchOptions{Algorithm: a, Tie: c.tie, Accept: mode.accept}
					}
					for _, text := range c.queries {
						checkSearch(t, c.x, bm25.Query(mode.q.Terms(text)), 100, opts)
					}
				})
			}
			t.Logf("%d documents, %d queries", c.x.Len(), len(c.queries))
		})
	}
}

// TestCollectionsQuality reports nDCG@10 of the index on the judged (test)
// queries, analysed as the stores analyse them, beside the FTS5
// generator's relevance-only figures (README, "Ranking quality"), and
// fails if the index loses more than 0.02 against one.
func TestCollectionsQuality(t *testing.T) {
	fts5 := map[string]float64{"scifact": 0.682, "cisi": 0.388, "cranfield": 0.359}
	for _, name := range collections {
		t.Run(name, func(t *testing.T) {
			c := loadCollection(t, name)
			sum := 0.0
			for _, q := range c.ds.Queries {
				hits, err := c.x.Search(t.Context(), bm25.Query(queryAnalysis.Terms(q.Text)), 100, bm25.SearchOptions{Tie: c.tie})
				if err != nil {
					t.Fatal(err)
				}
				ranked := make([]string, len(hits))
				for i, h := range hits {
					ranked[i] = c.ids[h.ID]
				}
				sum += bench.NDCG(ranked, c.ds.Qrels[q.ID], 10)
			}
			ndcg := sum / float64(len(c.ds.Queries))
			t.Logf("%s: nDCG@10 %.3f over %d queries (FTS5 relevance-only %.3f)", name, ndcg, len(c.ds.Queries), fts5[name])
			if ndcg < fts5[name]-0.02 {
				t.Errorf("%s: nDCG@10 %.3f, FTS5 gave %.3f", name, ndcg, fts5[name])
			}
		})
	}
}
