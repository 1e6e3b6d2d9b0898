package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/store/storetest"
)

// cisiDir returns the shared CISI collection (1,460 abstracts whose xrefs
// are citation links): ../shared/datasets/cisi from the module root, or
// $H4R_DATASETS/cisi.
func cisiDir() string {
	if root := os.Getenv("H4R_DATASETS"); root != "" {
		return filepath.Join(root, "cisi")
	}
	return filepath.Join("..", "..", "..", "shared", "datasets", "cisi")
}

// BenchmarkGraphCISI measures the graph stage on CISI as the engine runs
// it: for each of the 76 test queries, anchors are the top 3 of its 100
// full-text hits, and the walk goes 2 hops, at most 100 hits. impl=cte is
// the recursive query hops used to be answered with, impl=walk the walk in
// memory. "targets" asks, 3 hops deep, for the distances of the 100 text
// hits (Query.Targets), of the walk only: the recursive query takes about
// a minute a pass there (TestWalkEqualsCTE checks that both agree). One
// iteration is a pass over every query; p50-ms and p95-ms are per query.
//
//	go test ./store/sqlite -run '^$' -bench GraphCISI -count 6 | tee cisi.txt
//	benchstat -col /impl cisi.txt
func BenchmarkGraphCISI(b *testing.B) {
	ds, err := bench.LoadBEIR(cisiDir(), "test")
	if err != nil {
		b.Skipf("CISI is not at %s (set H4R_DATASETS): %v", cisiDir(), err)
	}
	s := openTemp(b)
	load(b, s, ds.Items())
	texts := make([]string, len(ds.Queries))
	for i, q := range ds.Queries {
		texts[i] = q.Text
	}
	anchors, hits, err := storetest.TextAnchors(b.Context(), s.FullText(), texts, 100, 3)
	if err != nil {
		b.Fatal(err)
	}
	hops, targets := make([]h4r.CandidateQuery, len(texts)), make([]h4r.CandidateQuery, len(texts))
	for i := range texts {
		hops[i] = h4r.CandidateQuery{Anchors: anchors[i], MaxHops: 2, Limit: 100}
		targets[i] = h4r.CandidateQuery{Anchors: anchors[i], MaxHops: 3, Targets: hits[i]}
	}
	warm(b, s)
	b.Run("hops=2", func(b *testing.B) {
		storetest.BenchHops(b, map[string]h4r.Generator{"impl=cte": sqlite.CTEGraph(s), "impl=walk": s.Graph()}, hops)
	})
	b.Run("targets", func(b *testing.B) {
		storetest.BenchHops(b, map[string]h4r.Generator{"impl=walk": s.Graph()}, targets)
	})
	// The walk with the item cache off, as the stage ran before the cache
	// (H4R_ITEM_CACHE_MB=0): every hit decoded from the file.
	uncached := openAt(b, filepath.Join(b.TempDir(), "uncached.db"), sqlite.WithItemCacheBytes(0))
	load(b, uncached, ds.Items())
	warm(b, uncached)
	b.Run("hops=2,cache=off", func(b *testing.B) {
		storetest.BenchHops(b, map[string]h4r.Generator{"impl=walk": uncached.Graph()}, hops)
	})
}

// BenchmarkGraph100k measures 2-hop walks from 3 random anchors, at most
// 100 hits, over 100,000 items holding 5 random links each. With
// H4R_BENCH_KEEP=1 the store is kept in the temporary directory and
// reused, so that -count 6 loads it once.
//
//	H4R_BENCH_KEEP=1 go test ./store/sqlite -run '^$' -bench Graph100k -count 6 | tee 100k.txt
func BenchmarkGraph100k(b *testing.B) {
	const n = 100_000
	var s *sqlite.Store
	if os.Getenv("H4R_BENCH_KEEP") == "1" {
		s = openAt(b, filepath.Join(os.TempDir(), "h4r_bench_graph100k.db"))
	} else {
		s = openTemp(b)
	}
	if c, err := s.Count(b.Context()); err != nil || c != n {
		load(b, s, storetest.LinkedItems(n, 5, 1))
	}
	var queries []h4r.CandidateQuery
	for _, a := range storetest.RandomAnchors(n, 76, 3, 2) {
		queries = append(queries, h4r.CandidateQuery{Anchors: a, MaxHops: 2, Limit: 100})
	}
	warm(b, s)
	storetest.BenchHops(b, map[string]h4r.Generator{"impl=cte": sqlite.CTEGraph(s), "impl=walk": s.Graph()}, queries)
}

// BenchmarkGraphLoad measures loading the link graph of 100,000 items
// holding 5 links each into memory (WarmGraph, or the first walk).
func BenchmarkGraphLoad(b *testing.B) {
	const n = 100_000
	path := filepath.Join(b.TempDir(), "h4r.db")
	if os.Getenv("H4R_BENCH_KEEP") == "1" {
		path = filepath.Join(os.TempDir(), "h4r_bench_graph100k.db")
	}
	s := openAt(b, path)
	if c, err := s.Count(b.Context()); err != nil || c != n {
		load(b, s, storetest.LinkedItems(n, 5, 1))
	}
	for b.Loop() {
		fresh := openAt(b, path)
		if err := fresh.WarmGraph(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		fresh.Close()
		b.StartTimer()
	}
}

func load(b *testing.B, s *sqlite.Store, items []h4r.Item) {
	b.Helper()
	start := time.Now()
	for i := 0; i < len(items); i += 500 {
		if _, err := s.Upsert(b.Context(), items[i:min(i+500, len(items))]); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("loaded %d items in %s", len(items), time.Since(start).Round(time.Millisecond))
}

// warm loads the graph, as a server does at start.
func warm(b *testing.B, s *sqlite.Store) {
	b.Helper()
	if err := s.WarmGraph(b.Context()); err != nil {
		b.Fatal(err)
	}
}
