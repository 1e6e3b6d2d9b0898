package bm25_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/bm25"
	"github.com/h4r/h4r/internal/cputime"
	"github.com/h4r/h4r/store/sqlite"
)

// zipfTexts generates n document texts of 12 to 60 words, and 64 queries of
// 3 to 6 words, from a 20,000-word vocabulary whose frequencies follow
// Zipf's law (s = 1.07), as words of real text do: a few very common words
// in most documents, a long tail of rare ones. Queries mix both.
func zipfTexts(seed uint64, n int) (docs, queries []string) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	syllables := strings.Fields("ka lo mi ne ru sa to vi de pa zo fe gu hi ja ce bo")
	seen := map[string]bool{}
	var vocab []string
	for len(vocab) < 20_000 {
		var sb strings.Builder
		for range 2 + rng.IntN(4) {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	docs = make([]string, n)
	for i := range docs {
		docs[i] = words(12 + rng.IntN(49))
	}
	queries = make([]string, 64)
	for i := range queries {
		queries[i] = words(3 + rng.IntN(4))
	}
	return docs, queries
}

// benchCorpus is one corpus, indexed and, for the FTS5 baseline, in a
// SQLite store (made on first use: loading 100k items takes minutes).
type benchCorpus struct {
	name          string
	docs, queries []string
	x             *bm25.Index
	extIDs        []string
	fts5          func() (*fts5, error)
}

// benchDir holds the benchmarks' stores; TestMain removes it.
var benchDir string

func TestMain(m *testing.M) {
	var err error
	if benchDir, err = os.MkdirTemp("", "bm25-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(benchDir)
	os.Exit(code)
}

// benchCorpora are built once per process: with -count 6 the benchmarks
// run six times over the same corpora.
var benchCorpora sync.Map // name → func() (*benchCorpus, error)

func loadBenchCorpus(b *testing.B, name string, texts func() ([]string, []string)) *benchCorpus {
	b.Helper()
	f, _ := benchCorpora.LoadOrStore(name, sync.OnceValues(func() (*benchCorpus, error) {
		docs, queries := texts()
		c := &benchCorpus{name: name, docs: docs, queries: queries, x: bm25.New()}
		for i, text := range docs {
			c.extIDs = append(c.extIDs, fmt.Sprintf("doc-%07d", i))
			if err := c.x.Add(uint32(i), text); err != nil {
				return nil, err
			}
		}
		c.fts5 = sync.OnceValues(c.loadStore)
		return c, nil
	}))
	c, err := f.(func() (*benchCorpus, error))()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// fts5 is a corpus in a SQLite store, and the store's file opened a second
// time for FTS5 queries of the benchmark's own, on an FTS5 table the
// benchmark builds there (the store dropped its own in migration 0008).
type fts5 struct {
	store *sqlite.Store
	db    *sql.DB
}

// loadStore writes the corpus into a SQLite store, kept for the process.
func (c *benchCorpus) loadStore() (*fts5, error) {
	path := filepath.Join(benchDir, c.name+".db")
	s, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	items := make([]h4r.Item, len(c.docs))
	for i, text := range c.docs {
		items[i] = h4r.Item{ID: c.extIDs[i], Kind: "note", Text: text}
	}
	for start := 0; start < len(items); start += 1000 {
		if _, err := s.Upsert(context.Background(), items[start:min(start+1000, len(items))]); err != nil {
			return nil, err
		}
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, err
	}
	// The table the store kept until migration 0008, built in one step.
	if _, err := db.Exec(`CREATE VIRTUAL TABLE items_fts USING fts5 (text, content = 'items', content_rowid = 'seq',
		tokenize = 'porter unicode61 remove_diacritics 2');
		INSERT INTO items_fts (items_fts) VALUES ('rebuild')`); err != nil {
		return nil, errors.Join(fmt.Errorf("building the FTS5 baseline: %w", err), db.Close())
	}
	return &fts5{store: s, db: db}, nil
}

func (c *benchCorpus) tie(a, b uint32) int { return strings.Compare(c.extIDs[a], c.extIDs[b]) }

// BenchmarkSearch compares, on the same corpora and queries, the ways to
// get a query's top 100: the index walked exhaustively, with MaxScore and
// with block-max WAND, and SQLite FTS5's ranking query alone (fts5-rank,
// what the index replaces) — and the store's generator on the index
// (index-generator, Store.FullText: the index, kept current, plus reading
// the rows). The store's former generator on FTS5 (fts5-generator) went
// with FTS5 in migration 0008; PERFORMANCE.md keeps its figures. One op is one query; the queries
// rotate. Compare with
//
//	benchstat -col /algo bench.txt
func BenchmarkSearch(b *testing.B) {
	corpora := []struct {
		name  string
		texts func() ([]string, []string)
	}{
		{"zipf-10k", func() ([]string, []string) { return zipfTexts(1, 10_000) }},
		{"zipf-100k", func() ([]string, []string) { return zipfTexts(2, 100_000) }},
		{"scifact", func() ([]string, []string) { return scifactTexts(b) }},
		// No FTS5 at a million: loading the store takes most of an hour
		// here; bench/RESULTS.md has FTS5's figure (5.1 s per query).
		{"zipf-1m", func() ([]string, []string) { return zipfTexts(3, 1_000_000) }},
	}
	for _, cp := range corpora {
		b.Run("corpus="+cp.name, func(b *testing.B) {
			c := loadBenchCorpus(b, cp.name, cp.texts)
			runtime.GC() // the corpus's garbage is not the search's
			for _, algo := range []bm25.Algorithm{bm25.Exhaustive, bm25.MaxScore, bm25.BlockMaxWAND} {
				b.Run("algo="+algo.String(), func(b *testing.B) {
					opts := bm25.SearchOptions{Algorithm: algo, Tie: c.tie}
					hits, i := 0, 0
					defer cputime.MeasureThread(b)()
					for b.Loop() {
						q := bm25.Query(queryAnalysis.Terms(c.queries[i%len(c.queries)]))
						h, err := c.x.Search(b.Context(), q, 100, opts)
						if err != nil {
							b.Fatal(err)
						}
						hits += len(h)
						i++
					}
					b.ReportMetric(float64(hits)/float64(i), "hits/op")
				})
			}
			if cp.name == "zipf-1m" {
				return
			}
			b.Run("algo=fts5-rank", func(b *testing.B) {
				f, err := c.fts5()
				if err != nil {
					b.Fatal(err)
				}
				hits, i := 0, 0
				defer cputime.MeasureThread(b)()
				for b.Loop() {
					match := sqlite.MatchExpression(c.queries[i%len(c.queries)])
					rows, err := f.db.QueryContext(b.Context(), `SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank, rowid LIMIT 100`, match)
					if err != nil {
						b.Fatal(err)
					}
					for rows.Next() {
						hits++
					}
					if err := rows.Err(); err != nil {
						b.Fatal(err)
					}
					rows.Close()
					i++
				}
				b.ReportMetric(float64(hits)/float64(i), "hits/op")
			})
			for _, gen := range []struct {
				name string
				of   func(*sqlite.Store) h4r.Generator
			}{
				{"index-generator", (*sqlite.Store).FullText},
			} {
				b.Run("algo="+gen.name, func(b *testing.B) {
					f, err := c.fts5()
					if err != nil {
						b.Fatal(err)
					}
					g := gen.of(f.store)
					if err := f.store.WarmFullText(b.Context()); err != nil {
						b.Fatal(err)
					}
					hits, i := 0, 0
					defer cputime.MeasureThread(b)()
					for b.Loop() {
						h, err := g.Generate(b.Context(), h4r.CandidateQuery{Text: c.queries[i%len(c.queries)]})
						if err != nil {
							b.Fatal(err)
						}
						hits += len(h)
						i++
					}
					b.ReportMetric(float64(hits)/float64(i), "hits/op")
				})
			}
		})
	}
}

// scifactTexts returns SciFact's documents (title and text) and all its
// queries.
func scifactTexts(b *testing.B) ([]string, []string) {
	c := loadCollection(b, "scifact")
	docs := make([]string, 0, len(c.ds.Docs))
	for _, it := range c.ds.Items() {
		docs = append(docs, it.Text)
	}
	return docs, c.queries
}

// BenchmarkBuild measures a rebuild of the index from 100,000 texts (what
// opening a store costs): one Add after another, and Prepare (the
// analysis) on every core with the Puts in order. It reports the index's
// heap per document.
func BenchmarkBuild(b *testing.B) {
	docs, _ := zipfTexts(2, 100_000)
	b.Run("mode=sequential", func(b *testing.B) {
		defer cputime.MeasureProcess(b)()
		for b.Loop() {
			x := bm25.New()
			for i, text := range docs {
				if err := x.Add(uint32(i), text); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("mode=parallel-prepare", func(b *testing.B) {
		build := func() *bm25.Index {
			x := bm25.New()
			for i, d := range bm25.PrepareAll(docs) {
				if err := x.Put(uint32(i), d); err != nil {
					b.Fatal(err)
				}
			}
			return x
		}
		done := cputime.MeasureProcess(b)
		for b.Loop() {
			build()
		}
		done()
		b.ReportMetric(heapPerDoc(func() any { return build() }, len(docs)), "B/doc")
	})
	// A store's rebuild analyses a batch of 4,096 texts at a time; a
	// Preparer keeps its workers' stems from one batch to the next, where
	// PrepareAll starts each batch with none.
	for _, stems := range []string{"per-batch", "kept"} {
		b.Run("mode=batches/stems="+stems, func(b *testing.B) {
			defer cputime.MeasureProcess(b)()
			for b.Loop() {
				x := bm25.New()
				var prep bm25.Preparer
				for start := 0; start < len(docs); start += 4096 {
					batch := docs[start:min(start+4096, len(docs))]
					var prepared []bm25.Doc
					if stems == "kept" {
						prepared = prep.PrepareAll(batch)
					} else {
						prepared = bm25.PrepareAll(batch)
					}
					for i, d := range prepared {
						if err := x.Put(uint32(start+i), d); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}

// heapPerDoc returns the heap that build's result keeps, per document.
func heapPerDoc(build func() any, n int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// BenchmarkRebuildFromSQLite measures what opening a store would cost the
// index: reading every item's row id and text from the items table of a
// store of 100,000 items, analysing them on every core and indexing them.
func BenchmarkRebuildFromSQLite(b *testing.B) {
	c := loadBenchCorpus(b, "zipf-100k", func() ([]string, []string) { return zipfTexts(2, 100_000) })
	f, err := c.fts5()
	if err != nil {
		b.Fatal(err)
	}
	done := cputime.MeasureProcess(b)
	for b.Loop() {
		rows, err := f.db.QueryContext(b.Context(), `SELECT seq, text FROM items ORDER BY seq`)
		if err != nil {
			b.Fatal(err)
		}
		var seqs []uint32
		var texts []string
		for rows.Next() {
			var seq uint32
			var text string
			if err := rows.Scan(&seq, &text); err != nil {
				b.Fatal(err)
			}
			seqs = append(seqs, seq)
			texts = append(texts, text)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			b.Fatal(err)
		}
		x := bm25.New()
		for i, d := range bm25.PrepareAll(texts) {
			if err := x.Put(seqs[i], d); err != nil {
				b.Fatal(err)
			}
		}
		if x.Len() != len(c.docs) {
			b.Fatalf("rebuilt %d documents, want %d", x.Len(), len(c.docs))
		}
	}
	done()
}
