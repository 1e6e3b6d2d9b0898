package sqlite_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/cputime"
	"github.com/h4r/h4r/internal/procmem"
	"github.com/h4r/h4r/store/sqlite"
)

// corpus generates item texts whose words follow a Zipf-like distribution,
// as words in real text do: a few very common, a long tail of rare ones.
type corpus struct {
	rng   *rand.Rand
	vocab []string
	zipf  *rand.Zipf
}

// domainWords start the vocabulary, so that the most frequent words look
// like those of test and incident reports.
const domainWords = `the failed test login selector timeout error page button element
	not found retry flaky network request response status checkout payment user session token expired
	database connection pool query slow deploy rollback release build pipeline cache miss memory leak
	crash stack trace null pointer exception assertion expected actual render layout mobile browser
	chrome firefox api endpoint latency spike alert incident fix patch regression migration schema`

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	syllables := strings.Fields("ka lo mi ne ru sa to vi de pa zo fe gu hi ja ce bo")
	vocab := strings.Fields(domainWords)
	for len(vocab) < 5000 {
		var sb strings.Builder
		for range 2 + rng.IntN(3) {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
		vocab = append(vocab, sb.String())
	}
	return &corpus{rng: rng, vocab: vocab, zipf: rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))}
}

func (c *corpus) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

// items returns n items with ids prefix-0…, 12 to 60 words of text, some
// metadata and, when linked, up to three links to earlier items.
func (c *corpus) items(prefix string, n int, linked bool) []h4r.Item {
	out := make([]h4r.Item, n)
	for i := range out {
		id := fmt.Sprintf("%s-%05d", prefix, i)
		it := h4r.Item{
			ID: id, Kind: []string{"test_failure", "fix", "incident", "note"}[c.rng.IntN(4)],
			Text:    c.words(12 + c.rng.IntN(49)),
			Content: map[string]any{"summary": c.words(8)},
			Metadata: h4r.Metadata{
				Tags:  []string{c.vocab[c.zipf.Uint64()%50]},
				Extra: map[string]any{"status": []string{"failed", "passed"}[c.rng.IntN(2)]},
			},
		}
		if linked && i > 0 {
			for range c.rng.IntN(4) {
				it.Links = append(it.Links, h4r.Link{Type: "caused_by", Target: fmt.Sprintf("%s-%05d", prefix, c.rng.IntN(i))})
			}
		}
		out[i] = it
	}
	return out
}

// loadedStore returns a store holding n generated items.
func loadedStore(b *testing.B, c *corpus, n int, linked bool) *sqlite.Store {
	b.Helper()
	s := openTemp(b)
	items := c.items("item", n, linked)
	for start := 0; start < len(items); start += 500 {
		if _, err := s.Upsert(b.Context(), items[start:min(start+500, len(items))]); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// benchStores keeps the benchmarks' loaded stores for the process (with
// -count 6 the benchmarks run six times over one store: loading 100,000
// items takes minutes); TestMain removes their folder.
var (
	benchStores sync.Map // "size" → func() (*sqlite.Store, error)
	benchDir    string
)

func TestMain(m *testing.M) {
	var err error
	if benchDir, err = os.MkdirTemp("", "sqlite-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(benchDir)
	os.Exit(code)
}

// benchStore is a loaded store and the heap its full-text index keeps per
// item (measured after a GC, around WarmFullText).
type benchStore struct {
	*sqlite.Store
	indexPerItem float64
}

// sharedStore returns a store holding n items of corpus seed (not linked),
// loaded once per process.
func sharedStore(b *testing.B, seed uint64, n int) benchStore {
	b.Helper()
	f, _ := benchStores.LoadOrStore(fmt.Sprint(seed, "-", n), sync.OnceValues(func() (benchStore, error) {
		counter, err := sharedCounter()
		if err != nil {
			return benchStore{}, err
		}
		s, err := sqlite.Open(context.Background(), filepath.Join(benchDir, fmt.Sprintf("fulltext-%d-%d.db", seed, n)),
			sqlite.WithTokenCounter(counter), sqlite.WithLogger(slog.New(slog.DiscardHandler)),
			sqlite.WithWriteTimeout(10*time.Minute)) // batches of 1000 on a loaded machine
		if err != nil {
			return benchStore{}, err
		}
		items := newCorpus(seed).items("item", n, false)
		for start := 0; start < len(items); start += 1000 {
			if _, err := s.Upsert(context.Background(), items[start:min(start+1000, len(items))]); err != nil {
				return benchStore{}, err
			}
		}
		// The index was not loaded during the load (no search yet): this
		// builds it.
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := s.WarmFullText(context.Background()); err != nil {
			return benchStore{}, err
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		return benchStore{s, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)}, nil
	}))
	s, err := f.(func() (benchStore, error))()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkFullText times the store's full-text generator on the
// in-memory BM25 index (gen=index, Store.FullText) at 10,000 and 100,000
// items (the FTS5 bm25() generator it replaced, gen=fts5, went with FTS5 in
// migration 0008; its figures stay in index/bm25/PERFORMANCE.md), with natural-language queries of three to
// six words, common and rare mixed; the query changes every iteration.
// "filtered" asks for a kind and a metadata value (about one item in
// eight passes). gen=index reports the index's heap per item (B/item,
// measured once per store, after a GC, around WarmFullText) and the
// process's RSS (both stores of both sizes loaded by then).
//
// It reports the CPU time of the benchmark's thread (cpu-ns/op) beside the
// wall time, which on a loaded machine counts other processes' turns.
//
//	go test ./store/sqlite -run '^$' -bench FullText -count 6 -timeout 2h | tee ft.txt
//	benchstat -col /gen ft.txt
func BenchmarkFullText(b *testing.B) {
	for _, size := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("items=%dk", size/1000), func(b *testing.B) {
			s := sharedStore(b, 1, size)
			c := newCorpus(99)
			queries := make([]string, 64)
			for i := range queries {
				queries[i] = c.words(3 + c.rng.IntN(4))
			}
			for _, bc := range []struct {
				name  string
				query func(i int) h4r.CandidateQuery
			}{
				{"limit_100", func(i int) h4r.CandidateQuery { return h4r.CandidateQuery{Text: queries[i%len(queries)]} }},
				{"limit_10", func(i int) h4r.CandidateQuery { return h4r.CandidateQuery{Text: queries[i%len(queries)], Limit: 10} }},
				{"filtered", func(i int) h4r.CandidateQuery {
					return h4r.CandidateQuery{Text: queries[i%len(queries)], Filters: filtersKindStatus()}
				}},
			} {
				for _, g := range []struct {
					name string
					gen  h4r.Generator
				}{{"index", s.FullText()}} {
					b.Run("case="+bc.name+"/gen="+g.name, func(b *testing.B) {
						hits, i := 0, 0
						done := cputime.MeasureThread(b)
						for b.Loop() {
							h, err := g.gen.Generate(b.Context(), bc.query(i))
							if err != nil {
								b.Fatal(err)
							}
							hits += len(h)
							i++
						}
						done()
						b.ReportMetric(float64(hits)/float64(i), "hits/op")
						if g.name == "index" {
							b.ReportMetric(s.indexPerItem, "B/item")
							if rss, err := procmem.Self(); err == nil {
								b.ReportMetric(float64(rss.Current)/(1<<20), "RSS-MB")
							}
						}
					})
				}
			}
		})
	}
}

func filtersKindStatus() h4r.Filters {
	return h4r.Filters{Kinds: []string{"test_failure"}, Metadata: map[string]any{"status": "failed"}}
}

// BenchmarkGraph walks three hops from three anchors over 10,000 items
// holding 1.5 links each on average.
func BenchmarkGraph(b *testing.B) {
	c := newCorpus(2)
	s := loadedStore(b, c, 10_000, true)
	gen := s.Graph()
	hits, i := 0, 0
	for b.Loop() {
		anchors := []string{fmt.Sprintf("item-%05d", (i*7919)%10_000), fmt.Sprintf("item-%05d", (i*104729)%10_000), fmt.Sprintf("item-%05d", (i*1299709)%10_000)}
		h, err := gen.Generate(b.Context(), h4r.CandidateQuery{Anchors: anchors})
		if err != nil {
			b.Fatal(err)
		}
		hits += len(h)
		i++
	}
	b.ReportMetric(float64(hits)/float64(i), "hits/op")
}

// BenchmarkUpsertBatch writes batches of 100 items (validation, token
// counting and one transaction each) into a store whose full-text index is
// loaded, as a server's is: new items, or items replacing the 1,000
// written first (the index takes each old text out, analysed again).
func BenchmarkUpsertBatch(b *testing.B) {
	const batchSize, replaced = 100, 1000
	c := newCorpus(3)
	templates := c.items("t", 1000, true)
	for _, write := range []string{"new", "replace"} {
		b.Run("write="+write, func(b *testing.B) {
			s := openTemp(b)
			if err := s.WarmFullText(b.Context()); err != nil {
				b.Fatal(err)
			}
			batch := make([]h4r.Item, batchSize)
			n, shift := 0, 0
			upsert := func() {
				for j := range batch {
					batch[j] = templates[(n+j+shift)%len(templates)]
					id := n + j
					if write == "replace" {
						id %= replaced
					}
					batch[j].ID = fmt.Sprintf("b%d", id)
				}
				if _, err := s.Upsert(b.Context(), batch); err != nil {
					b.Fatal(err)
				}
				n += batchSize
			}
			for n < replaced {
				upsert()
			}
			shift = 1 // a replace gets another template's text
			first := n
			for b.Loop() {
				upsert()
			}
			b.ReportMetric(float64(n-first)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkUpsertSync measures what each sync mode costs ingest: batches
// of 1 (one commit an item, where the sync at each commit shows most) and
// of 100 new items.
func BenchmarkUpsertSync(b *testing.B) {
	c := newCorpus(3)
	templates := c.items("t", 1000, true)
	for _, mode := range []string{sqlite.SyncNormal, sqlite.SyncFull} {
		for _, size := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/batch=%d", mode, size), func(b *testing.B) {
				s := openAt(b, filepath.Join(b.TempDir(), "h4r.db"), sqlite.WithSync(mode))
				batch := make([]h4r.Item, size)
				n := 0
				for b.Loop() {
					for j := range batch {
						batch[j] = templates[(n+j)%len(templates)]
						batch[j].ID = fmt.Sprintf("b%d-%d", n, j)
					}
					if _, err := s.Upsert(b.Context(), batch); err != nil {
						b.Fatal(err)
					}
					n += size
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
			})
		}
	}
}
