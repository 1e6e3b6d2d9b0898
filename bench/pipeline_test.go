package bench_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/golden"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// patientWrites is the store's write deadline in these tests: loading a
// dataset under -race on a loaded machine misses the 5 s default, and
// what they measure does not depend on it.
const patientWrites = time.Minute

// loadSynthetic generates a small synthetic set and loads it through the
// real service into a fresh embedded store.
func loadSynthetic(t *testing.T) (*bench.Dataset, *app.App) {
	t.Helper()
	dir := t.TempDir()
	if err := bench.Generate(dir, bench.GenOptions{Seed: 5, PerCategory: 2, Noise: 3}); err != nil {
		t.Fatal(err)
	}
	ds, err := bench.LoadBEIR(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.WriteTimeout = patientWrites
	a, err := bench.OpenLoaded(context.Background(), cfg, ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return ds, a
}

// The tuner's cache must rank exactly as the pipeline does, or tuned
// weights would not do in the service what they did in the search.
func TestCacheRanksAsThePipeline(t *testing.T) {
	ds, a := loadSynthetic(t)
	ctx := context.Background()
	settings := []struct {
		name    string
		weights h4r.Weights
	}{
		{"relevance only", bench.RelevanceOnly()},
		{"seed weights", bench.SeedWeights()},
		{"configured defaults", config.Default().Weights},
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			runs, err := bench.Run(ctx, a, ds, bench.WithWeights(s.weights), bench.WithWorkers(1))
			if err != nil {
				t.Fatal(err)
			}
			qs := bench.NewTuneQueries(ds, runs)
			p := bench.Params{Weights: s.weights, Lambda: a.Config.RecencyDecayLambda}
			for i, q := range qs {
				if got, want := p.Rank(q, 0), runs[i].RankedIDs(); !slices.Equal(got, want) {
					t.Errorf("%s: cache ranks %v, pipeline %v", q.ID, got, want)
				}
			}
		})
	}
}

// Access counts of the dataset reach the frequency signal through real
// deliveries recorded by the store.
func TestAccessCountsAreReplayed(t *testing.T) {
	ds, a := loadSynthetic(t)
	runs, err := bench.Run(context.Background(), a, ds)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range runs {
		if r.Query.Category != bench.CatFrequency {
			continue
		}
		for _, c := range r.Ranked {
			if strings.HasSuffix(c.ID, "-right0") {
				checked++
				if c.Signals[h4r.Frequency] != 1 {
					t.Errorf("%s: frequency %v, want 1 (the most used item of its scope)", c.ID, c.Signals[h4r.Frequency])
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no frequency query ranked its right answer")
	}
	// A benchmark run delivers nothing, so it changes no access count: the
	// frequency signal of one query does not depend on those run before it.
	id := runs[0].Ranked[0].ID
	before, err := a.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil { // flushes whatever was recorded
		t.Fatal(err)
	}
	again, err := app.Open(context.Background(), a.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	after, err := again.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Metadata.AccessCount != before.Metadata.AccessCount {
		t.Errorf("%s: access count %d after the run, %d before", id, after.Metadata.AccessCount, before.Metadata.AccessCount)
	}
}

// TestQualityGolden pins the metrics of the tiny fixture, per query and
// overall. Rewrite: go test ./bench -run TestQualityGolden -update
func TestQualityGolden(t *testing.T) {
	ds, err := bench.LoadBEIR("testdata/tiny", "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.WriteTimeout = patientWrites
	ctx := context.Background()
	a, err := bench.OpenLoaded(ctx, cfg, ds)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var b strings.Builder
	for _, w := range []struct {
		name string
		w    h4r.Weights
	}{{"relevance", bench.RelevanceOnly()}, {"seed", bench.SeedWeights()}} {
		runs, err := bench.Run(ctx, a, ds, bench.WithWeights(w.w))
		if err != nil {
			t.Fatal(err)
		}
		overall, groups, per := bench.Evaluate(ds, runs)
		fmt.Fprintf(&b, "weights %s: overall %+v\n", w.name, overall)
		for _, g := range groups {
			fmt.Fprintf(&b, "  group %s (%d): %+v\n", g.Group, g.Queries, g.Metrics)
		}
		for _, q := range per {
			fmt.Fprintf(&b, "  %s: %v %+v missed %v\n", q.ID, q.Top10, q.Metrics, q.Missed)
		}
	}
	golden.Text(t, filepath.Join("testdata", "quality.golden"), []byte(b.String()), *update)
}

// TestSciFactReference checks that relevance-only ranking on the embedded
// store reproduces the BM25 reference of shared/datasets/README.md (nDCG@10
// 0.681 ± 0.01). It loads 5,183 documents: opt in with H4R_BENCH_SCIFACT=1.
func TestSciFactReference(t *testing.T) {
	if os.Getenv("H4R_BENCH_SCIFACT") == "" {
		t.Skip("set H4R_BENCH_SCIFACT=1 to run (loads 5,183 documents, ~30 s)")
	}
	ds, err := bench.LoadBEIR(filepath.Join("..", "..", "shared", "datasets", "scifact"), "test")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("scifact is not beside the project: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.WriteTimeout = patientWrites
	a, err := bench.OpenLoaded(context.Background(), cfg, ds)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	runs, err := bench.Run(context.Background(), a, ds, bench.WithWeights(bench.RelevanceOnly()))
	if err != nil {
		t.Fatal(err)
	}
	overall, _, _ := bench.Evaluate(ds, runs)
	if math.Abs(overall.NDCG10-0.681) > 0.01 {
		t.Errorf("nDCG@10 = %.4f, want 0.681 ± 0.01", overall.NDCG10)
	}
}

// max_hops reaches the request: the root cause two hops from the symptoms
// gets causality 1/3 by default and none at one hop.
func TestMaxHopsReachesTheRequest(t *testing.T) {
	ds, a := loadSynthetic(t)
	tests := []struct {
		name string
		hops int
		want float64
	}{{"default three hops", 0, 1.0 / 3}, {"one hop", 1, 0}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := bench.Run(context.Background(), a, ds, bench.WithMaxHops(tt.hops))
			if err != nil {
				t.Fatal(err)
			}
			checked := 0
			for _, r := range runs {
				for _, c := range r.Ranked {
					if strings.HasSuffix(c.ID, "-rootcause0") {
						checked++
						if got := c.Signals[h4r.Causality]; math.Abs(got-tt.want) > 1e-9 {
							t.Errorf("%s: causality %v, want %v", c.ID, got, tt.want)
						}
					}
				}
			}
			if checked == 0 {
				t.Fatal("no root cause was ranked")
			}
		})
	}
}

// TestReplayCountsUsesAsProduction: in replay mode each pack delivers, and
// the judged-relevant items among its first ten delivered are used (one
// access each); with H4R_ACCESS_COUNTING=use, the default, delivering alone
// counts nothing. The counts reach the store: after the run each item's
// accessCount is the dataset's plus its uses.
func TestReplayCountsUsesAsProduction(t *testing.T) {
	ds, a := loadSynthetic(t)
	ctx := context.Background()
	runs, err := bench.Run(ctx, a, ds, bench.WithReplay(true))
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]int64{}
	deliveredOnly := map[string]bool{}
	for _, r := range runs {
		if len(r.Delivered) == 0 {
			t.Fatalf("%s: replay delivered nothing", r.Query.ID)
		}
		for i, id := range r.Delivered {
			if i < 10 && ds.Qrels[r.Query.ID][id] > 0 {
				uses[id]++
			} else {
				deliveredOnly[id] = true
			}
		}
	}
	if len(uses) == 0 {
		t.Fatal("no pack delivered a relevant item: the test checks nothing")
	}
	initial := map[string]int64{}
	for _, d := range ds.Docs {
		initial[d.ID] = d.AccessCount
	}
	if err := a.Close(); err != nil { // flushes whatever was recorded
		t.Fatal(err)
	}
	again, err := app.Open(ctx, a.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for id := range deliveredOnly {
		if _, used := uses[id]; !used {
			uses[id] = 0 // delivered, never used: unchanged
		}
	}
	for id, n := range uses {
		it, err := again.Store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := initial[id] + n; it.Metadata.AccessCount != want {
			t.Errorf("%s: accessCount %d after the replay, want %d (%d before, %d uses)", id, it.Metadata.AccessCount, want, initial[id], n)
		}
	}
}
