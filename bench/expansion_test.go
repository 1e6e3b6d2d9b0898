package bench_test

import (
	"fmt"
	"testing"

	"github.com/h4r/h4r/bench"
)

// queriesScoring makes n queries of one dataset whose nDCG@10 under each
// setting is scores[setting].
func queriesScoring(dataset string, n int, scores ...float64) []bench.ExpansionQuery {
	out := make([]bench.ExpansionQuery, n)
	for i := range out {
		out[i] = bench.ExpansionQuery{Dataset: dataset, ID: fmt.Sprint(i), NDCG10: scores}
	}
	return out
}

func TestCrossValidateExpansion(t *testing.T) {
	grid := bench.ExpansionGrid([]int{10}, []int{10}, []float64{0.5}, []float64{0, 0.5}, []float64{0}, []bool{false})
	if len(grid) != 3 || grid[0].On || !grid[1].On || grid[2].Params.FirstPass != 0.5 {
		t.Fatalf("grid %+v: want off, then first-pass 0 and 0.5", grid)
	}
	tests := []struct {
		name string
		qs   []bench.ExpansionQuery
		want string // the final choice
		// asked: the choice among the settings that expand, losses allowed
		asked string
	}{
		{"the best mean where nothing loses",
			append(queriesScoring("a", 10, 0.5, 0.7, 0.6), queriesScoring("b", 10, 0.3, 0.3, 0.45)...), grid[2].Name, grid[2].Name},
		{"a setting that loses on one set is never chosen",
			append(queriesScoring("a", 10, 0.5, 0.9, 0.5), queriesScoring("b", 10, 0.3, 0.29, 0.3)...), "off", grid[1].Name},
		{"ties go to off",
			append(queriesScoring("a", 10, 0.5, 0.5, 0.5), queriesScoring("b", 10, 0.3, 0.3, 0.3)...), "off", grid[1].Name},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := bench.CrossValidateExpansion(grid, tt.qs, 5, 1)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Final.Name != tt.want {
				t.Errorf("final %q, want %q", rep.Final.Name, tt.want)
			}
			if rep.Asked.Name != tt.asked {
				t.Errorf("asked %q, want %q", rep.Asked.Name, tt.asked)
			}
			if len(rep.PerFold) != 5 || len(rep.HeldOut) != 2 {
				t.Fatalf("%d folds, %d held-out datasets: want 5 and 2", len(rep.PerFold), len(rep.HeldOut))
			}
			for _, h := range rep.HeldOut {
				if h.Queries != 10 {
					t.Errorf("%s: %d held-out queries, want every one of its 10", h.Dataset, h.Queries)
				}
			}
		})
	}
	t.Run("the held-out figure is each query under what was chosen without it", func(t *testing.T) {
		// Fold by fold the training queries choose; a query's held-out
		// score is its own under that choice, so a setting that only one
		// query likes cannot lift the held-out figure above off.
		qs := queriesScoring("a", 10, 0.5, 0.4, 0.4)
		qs[3].NDCG10 = []float64{0.5, 1, 0.4}
		rep, err := bench.CrossValidateExpansion(grid, qs, 5, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.HeldOut[0].Chosen; got > rep.HeldOut[0].Off {
			t.Errorf("held out %.3f above off %.3f: the query that liked expansion was scored by a choice made with it", got, rep.HeldOut[0].Off)
		}
	})
	t.Run("the first setting must be off", func(t *testing.T) {
		if _, err := bench.CrossValidateExpansion(grid[1:], queriesScoring("a", 10, 0.5, 0.5), 5, 1); err == nil {
			t.Error("no error for a grid without off first")
		}
	})
}
