package bench_test

import (
	"context"
	"testing"

	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/config"
)

// TestKnowledgeUpdates runs the labelled knowledge-update set
// (testdata/updates: statements restated later with a supersedes link,
// with a shared subject, or with validity bounds) through the service:
// with the shipped defaults the later statement is the top hit where the
// penalty-free ranking (superseded keep) puts the earlier one first, and
// a question about the earlier value loses nothing. The floors are the
// measured figures less a margin (bench/results/2026-11-29/quality-supersede.md).
func TestKnowledgeUpdates(t *testing.T) {
	ds, err := bench.LoadBEIR("testdata/updates", "test")
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
	top1 := func(opts ...bench.RunOption) map[string]float64 {
		runs, err := bench.Run(ctx, a, ds, opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, _, per := bench.Evaluate(ds, runs)
		hits, n := map[string]float64{}, map[string]float64{}
		for _, q := range per {
			n[q.Category]++
			if len(q.Top10) > 0 && ds.Qrels[q.ID][q.Top10[0]] > 0 {
				hits[q.Category]++
			}
		}
		for c := range n {
			hits[c] /= n[c]
		}
		return hits
	}
	defaults, keep := top1(), top1(bench.WithSuperseded("keep"))
	for _, tt := range []struct {
		category         string
		floor, keepBelow float64 // defaults at least floor; keep under keepBelow (or -1: equal)
	}{
		{"knowledge-update", 0.95, 0.9},
		{"same-subject", 0.25, 0.1},
		{"expired", 0.6, -1},
		{"previous-value", 0.15, -1},
		{"unchanged", 0.75, -1},
	} {
		t.Run(tt.category, func(t *testing.T) {
			d, k := defaults[tt.category], keep[tt.category]
			if d < tt.floor {
				t.Errorf("R@1 with the defaults %.3f, floor %.3f", d, tt.floor)
			}
			if tt.keepBelow >= 0 && k >= tt.keepBelow {
				t.Errorf("R@1 with superseded keep %.3f, want under %.3f: the penalty no longer decides", k, tt.keepBelow)
			}
			if tt.keepBelow < 0 && k != d {
				t.Errorf("R@1 with superseded keep %.3f, with the defaults %.3f: want equal", k, d)
			}
		})
	}
}
