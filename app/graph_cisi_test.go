package app_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/store/neo4j/bolttest"
)

// cisiDir is the shared CISI collection, beside the project.
const cisiDir = "../../shared/datasets/cisi"

// BenchmarkCISICausality measures the causality signal on CISI, whose
// xrefs are citation links: the same keyword ranking (normalised BM25)
// without and with causality, the hops coming once from the store's CTE
// and once from Neo4j (the Bolt fake, through the real driver). It fails
// unless both hop paths give every query the same candidates at the same
// distances. A measurement, not a test: it runs only with -bench.
//
//	go test ./app -run '^$' -bench CISICausality -benchtime 1x
func BenchmarkCISICausality(b *testing.B) {
	ds, err := bench.LoadBEIR(cisiDir, "test")
	if errors.Is(err, fs.ErrNotExist) {
		b.Skipf("CISI is not at %s (see shared/datasets/README.md): %v", cisiDir, err)
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	openLoaded := func(neo4jURL string, maxHops int) *app.App {
		cfg := config.Default()
		cfg.DataDir = b.TempDir()
		cfg.GeneratorTimeout, cfg.RequestTimeout = patient, patient
		cfg.Neo4jURL, cfg.MaxHops = neo4jURL, maxHops
		a, err := bench.OpenLoaded(ctx, cfg, ds, bench.WithLogger(quiet))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Close() })
		return a
	}
	weights := func(causality float64) h4r.Weights {
		var w h4r.Weights
		w[h4r.Relevance], w[h4r.Causality] = 1-causality, causality
		return w
	}
	run := func(a *app.App, causality float64) ([]bench.QueryRun, bench.Metrics) {
		runs, err := bench.Run(ctx, a, ds, bench.WithWeights(weights(causality)), bench.WithDelivery(false))
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range runs {
			if len(r.Warn) > 0 {
				b.Fatalf("query %s: warnings %v", r.Query.ID, r.Warn)
			}
		}
		m, _, _ := bench.Evaluate(ds, runs)
		return runs, m
	}
	report := os.Getenv("H4R_CISI_REPORT") // a file to append the table to
	var lines []string
	for range b.N {
		for _, hops := range []int{1, 2, 3} {
			srv := bolttest.Start(b, bolttest.NewGraph())
			cte, graph := openLoaded("", hops), openLoaded(srv.URL(), hops)
			_, base := run(cte, 0)
			lines = append(lines, fmt.Sprintf("| %d | 0 (BM25 only) | %.4f | %.4f | %.4f | %.4f | — |", hops, base.NDCG10, base.MRR10, base.Recall10, base.Recall100))
			for _, w := range []float64{0.1, 0.2, 0.3, 0.5} {
				cteRuns, withCTE := run(cte, w)
				neoRuns, withNeo4j := run(graph, w)
				same := sameHops(b, cteRuns, neoRuns)
				if withCTE != withNeo4j {
					b.Errorf("max hops %d, weight %.1f: CTE %+v, Neo4j %+v", hops, w, withCTE, withNeo4j)
				}
				lines = append(lines, fmt.Sprintf("| %d | %.1f | %.4f | %.4f | %.4f | %.4f | %d/%d |", hops, w,
					withCTE.NDCG10, withCTE.MRR10, withCTE.Recall10, withCTE.Recall100, same, len(cteRuns)))
				if hops == 3 && w == 0.3 {
					b.ReportMetric(base.NDCG10, "nDCG@10-bm25")
					b.ReportMetric(withCTE.NDCG10, "nDCG@10-causality")
				}
			}
		}
	}
	table := "| max hops | causality weight | nDCG@10 | MRR@10 | recall@10 | recall@100 | queries with identical hop candidates (CTE = Neo4j) |\n|---|---|---|---|---|---|---|\n"
	for _, l := range lines {
		table += l + "\n"
	}
	// Printed, not logged: the testing package cuts a benchmark's log to a
	// few lines.
	fmt.Print(table)
	if report != "" {
		if err := os.WriteFile(filepath.Clean(report), []byte(table), 0o644); err != nil {
			b.Error(err)
		}
	}
}

// sameHops checks that two runs found the same hop candidates, at the same
// distance (the causality signal is 1/(1+d)), for every query, and returns
// how many queries it compared.
func sameHops(b *testing.B, x, y []bench.QueryRun) int {
	b.Helper()
	n := 0
	for i := range x {
		hx, hy := hopSignals(x[i]), hopSignals(y[i])
		if !maps.Equal(hx, hy) {
			b.Errorf("query %s: CTE hops %v, Neo4j hops %v", x[i].Query.ID, hx, hy)
			continue
		}
		if x[i].Sources["graph"].Candidates != y[i].Sources["graph"].Candidates {
			b.Errorf("query %s: %d graph candidates from the CTE, %d from Neo4j", x[i].Query.ID,
				x[i].Sources["graph"].Candidates, y[i].Sources["graph"].Candidates)
			continue
		}
		n++
	}
	return n
}

func hopSignals(r bench.QueryRun) map[string]float64 {
	out := map[string]float64{}
	for _, c := range r.Ranked {
		if s := c.Signals[h4r.Causality]; s > 0 {
			out[c.ID] = s
		}
	}
	return out
}
