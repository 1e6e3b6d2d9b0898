package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/store/postgres"
	"github.com/h4r/h4r/store/storetest"
)

// cisiDir returns the shared CISI collection (1,460 abstracts whose xrefs
// are citation links): ../shared/datasets/cisi from the module root, or
// $H4R_DATASETS/cisi.
func cisiDir() string {
	if root := os.Getenv("H4R_DATASETS"); root != "" {
		return filepath.Join(root, "cisi")
	}
	return filepath.Join(sharedDatasets, "cisi")
}

// graphImpls are the hop generators measured: the recursive query hops
// used to be answered with, the one-statement levels walk, the frontier
// walk the store answers with while its graph in memory is loading or
// behind, and the store's generator with that graph loaded (WarmGraph).
func graphImpls(s *postgres.Store, memory h4r.Generator) map[string]h4r.Generator {
	return map[string]h4r.Generator{"impl=cte": postgres.CTEGraph(s), "impl=levels": postgres.LevelsGraph(s),
		"impl=frontier": postgres.FrontierGraph(s), "impl=memory": memory}
}

// warmGraph runs the store's graph loading and polling in the background,
// as a server does, until b ends, and returns its graph generator once the
// graph is loaded.
func warmGraph(b *testing.B, s *postgres.Store) h4r.Generator {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.WarmGraph(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("WarmGraph: %v", err)
		}
	})
	start := time.Now()
	for s.GraphReady(b.Context()) != nil {
		if time.Since(start) > 5*time.Minute {
			b.Fatal("the link graph did not load within 5 minutes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Logf("link graph loaded in %v", time.Since(start).Round(time.Millisecond))
	return s.Graph()
}

// BenchmarkGraphCISI measures the graph stage on CISI as the engine runs
// it: for each of the 76 test queries, anchors are the top 3 of its 100
// full-text hits, and the walk goes 2 hops, at most 100 hits. "targets"
// asks, 3 hops deep, for the distances of the 100 text hits
// (Query.Targets), of the two walks only (TestWalkEqualsCTE and
// TestMemoryWalkEqualsCTE check them against the others). One iteration is a pass over every query; p50-ms
// and p95-ms are per query.
//
//	H4R_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test ./store/postgres -run '^$' -bench GraphCISI -count 6 | tee cisi.txt
//	benchstat -col /impl cisi.txt
func BenchmarkGraphCISI(b *testing.B) {
	ds, err := bench.LoadBEIR(cisiDir(), "test")
	if err != nil {
		b.Skipf("CISI is not at %s (set H4R_DATASETS): %v", cisiDir(), err)
	}
	dsn, fresh := benchSchema(b, "h4r_bench_graph_cisi_7") // _7: migration 0007, so that older binaries keep theirs
	s := postgres.OpenAt(b, dsn)
	if fresh {
		loadItems(b, s.Upsert, ds.Items(), 500)
		vacuum(b, rawPool(b, dsn))
	}
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
	memory := warmGraph(b, s)
	b.Run("hops=2", func(b *testing.B) { storetest.BenchHops(b, graphImpls(s, memory), hops) })
	b.Run("targets", func(b *testing.B) {
		storetest.BenchHops(b, map[string]h4r.Generator{"impl=frontier": postgres.FrontierGraph(s), "impl=memory": memory}, targets)
	})
}

// BenchmarkGraph100k measures 2-hop walks from 3 random anchors, at most
// 100 hits, over 100,000 items holding 5 random links each. With
// H4R_BENCH_KEEP=1 the schema is kept and reused, so that -count 6 loads
// it once.
func BenchmarkGraph100k(b *testing.B) {
	const n = 100_000
	dsn, _ := benchSchema(b, "h4r_bench_graph100k_7")
	s := postgres.OpenAt(b, dsn)
	if c, err := s.Count(b.Context()); err != nil || c != n {
		loadItems(b, s.Upsert, storetest.LinkedItems(n, 5, 1), 500)
		vacuum(b, rawPool(b, dsn))
	}
	var queries []h4r.CandidateQuery
	for _, a := range storetest.RandomAnchors(n, 76, 3, 2) {
		queries = append(queries, h4r.CandidateQuery{Anchors: a, MaxHops: 2, Limit: 100})
	}
	storetest.BenchHops(b, graphImpls(s, warmGraph(b, s)), queries)
}

// BenchmarkUpsertGraphLog measures what the log of graph changes
// (migration 0007's triggers) adds to ingest: rewriting batches of 500
// items holding 5 links each, in a store of 20,000 such items, with the
// triggers on (log=on, as shipped) and disabled (log=off), alternately in
// one run. One iteration is one batch.
//
//	H4R_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test ./store/postgres -run '^$' -bench UpsertGraphLog -count 6
func BenchmarkUpsertGraphLog(b *testing.B) {
	const n, batch = 20_000, 500
	dsn := postgres.NewSchema(b)
	s := postgres.OpenAt(b, dsn)
	items := storetest.LinkedItems(n, 5, 3)
	loadItems(b, s.Upsert, items, batch)
	pool := rawPool(b, dsn)
	setTriggers := func(on bool) {
		verb := "ENABLE"
		if !on {
			verb = "DISABLE"
		}
		for _, t := range []string{"items graph_items_insert", "items graph_items_delete", "links graph_links_insert",
			"links graph_links_delete", "links graph_links_update"} {
			table, trigger, _ := strings.Cut(t, " ")
			if _, err := pool.Exec(b.Context(), "ALTER TABLE "+table+" "+verb+" TRIGGER "+trigger); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, on := range []bool{true, false} {
		name := "log=off"
		if on {
			name = "log=on"
		}
		b.Run(name, func(b *testing.B) {
			setTriggers(on)
			defer setTriggers(true)
			i := 0
			for b.Loop() {
				start := (i * batch) % n
				if _, err := s.Upsert(b.Context(), items[start:start+batch]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
