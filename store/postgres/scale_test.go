package postgres_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/postgres"
)

// scaleCorpus generates item texts whose words follow a Zipf distribution
// over a large vocabulary, as words in real text do, with log-normal
// lengths (median 50 words, a long tail to 400).
type scaleCorpus struct {
	rng   *rand.Rand
	vocab []string
	zipf  *rand.Zipf
}

func newScaleCorpus(seed uint64, vocabSize int) *scaleCorpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	syllables := strings.Fields("ka lo mi ne ru sa to vi de pa zo fe gu hi ja ce bo ly wu xi qa")
	seen := map[string]bool{}
	vocab := make([]string, 0, vocabSize)
	for len(vocab) < vocabSize {
		var sb strings.Builder
		for range 2 + rng.IntN(4) {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	return &scaleCorpus{rng: rng, vocab: vocab, zipf: rand.NewZipf(rng, 1.07, 2, uint64(vocabSize-1))}
}

func (c *scaleCorpus) text() string {
	n := int(math.Round(math.Exp(math.Log(50) + 0.6*c.rng.NormFloat64())))
	n = min(max(n, 5), 400)
	w := make([]string, n)
	for i := range w {
		w[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

// words picks n distinct words with ranks in [lo, hi).
func (c *scaleCorpus) words(n, lo, hi int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = c.vocab[lo+c.rng.IntN(hi-lo)]
	}
	return strings.Join(w, " ")
}

func (c *scaleCorpus) item(i int) h4r.Item {
	return h4r.Item{
		ID:   fmt.Sprintf("s-%07d", i),
		Kind: []string{"test_failure", "fix", "incident", "note"}[c.rng.IntN(4)],
		Text: c.text(),
		Metadata: h4r.Metadata{
			CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute),
			Tags:      []string{c.vocab[c.rng.IntN(50)]},
			Extra:     map[string]any{"status": []string{"failed", "passed"}[c.rng.IntN(2)]},
		},
	}
}

// BenchmarkScale loads H4R_SCALE_ITEMS generated items (a 200,000-word
// Zipf vocabulary, log-normal lengths) and measures ingest throughput, the
// store's size, and full-text candidate latency (top 100) for selective
// queries (2–4 words of rank 2,000–50,000), non-selective ones (3–6 of the
// 100 commonest words) and non-selective ones with a kind filter, each
// beside Postgres's ts_rank over a GIN-indexed tsvector in the same run.
// It is skipped unless H4R_SCALE_ITEMS is set; with H4R_BENCH_KEEP=1 the
// loaded schema is kept and reused by the next run.
//
//	H4R_SCALE_ITEMS=1000000 H4R_BENCH_KEEP=1 \
//	H4R_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test ./store/postgres -run '^$' -bench Scale -benchtime 200x -timeout 3h
func BenchmarkScale(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("H4R_SCALE_ITEMS"))
	if n <= 0 {
		b.Skip("set H4R_SCALE_ITEMS (e.g. 1000000) to run the scale benchmark")
	}
	dsn, fresh := benchSchema(b, fmt.Sprintf("h4r_bench_scale_%d", n))
	s := postgres.OpenAt(b, dsn)
	pool := rawPool(b, dsn)
	c := newScaleCorpus(7, 200_000)
	// A kept schema holding fewer items (an interrupted run, or a smaller
	// run's schema renamed) is loaded up to n: the generator is replayed
	// over the items it holds, so the corpus is the same either way.
	have, err := s.Count(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	if fresh || have < n {
		const batch = 2000
		start := time.Now()
		items := make([]h4r.Item, 0, batch)
		for i := range n {
			it := c.item(i)
			if i < have {
				continue
			}
			items = append(items, it)
			if len(items) == batch || i == n-1 {
				if _, err := s.Upsert(b.Context(), items); err != nil {
					b.Fatalf("loading items up to %d: %v", i, err)
				}
				items = items[:0]
			}
			if (i+1)%100_000 == 0 {
				b.Logf("%d items in %v", i+1, time.Since(start).Round(time.Second))
			}
		}
		took := time.Since(start)
		b.Logf("ingest: %d items (from %d to %d) in %v: %.0f items/s (generation, token counting and validation included)",
			n-have, have, n, took.Round(time.Second), float64(n-have)/took.Seconds())
		vacuum(b, pool)
		addTSVector(b, pool)
		vacuum(b, pool)
	}
	var storeBytes, postingsBytes, tsvBytes int64
	err = pool.QueryRow(b.Context(), `SELECT
		(SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'),
		pg_total_relation_size('postings'),
		pg_relation_size('items_tsv')`).Scan(&storeBytes, &postingsBytes, &tsvBytes)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("store: %d MB in all (postings and their indexes %d MB; the reference's GIN index %d MB, not part of the store)",
		storeBytes>>20, postingsBytes>>20, tsvBytes>>20)

	queries := func(lo, hi int) []string {
		out := make([]string, 64)
		for i := range out {
			out[i] = c.words(2+c.rng.IntN(3), lo, hi)
		}
		return out
	}
	selective := queries(2000, 50_000)
	common := make([]string, 64)
	for i := range common {
		common[i] = c.words(3+c.rng.IntN(4), 0, 100)
	}
	kind := h4r.Filters{Kinds: []string{"incident"}}
	for _, qc := range []struct {
		name    string
		texts   []string
		filters h4r.Filters
	}{
		{"selective", selective, h4r.Filters{}},
		{"nonselective", common, h4r.Filters{}},
		{"nonselective_kind", common, kind},
	} {
		gen := s.FullText()
		b.Run(qc.name+"/bm25", func(b *testing.B) {
			hits := 0
			run := func(ctx context.Context, text string, limit int) ([]string, error) {
				h, err := gen.Generate(ctx, h4r.CandidateQuery{Text: text, Limit: limit, Filters: qc.filters})
				hits += len(h)
				return nil, err
			}
			measure(b, run, qc.texts, 100)
		})
		if qc.filters.Empty() {
			b.Run(qc.name+"/ts_rank", func(b *testing.B) { measure(b, tsRank(pool), qc.texts, 100) })
		}
	}
}
