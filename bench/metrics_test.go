package bench_test

import (
	"math"
	"testing"

	"github.com/h4r/h4r/bench"
)

func TestMetrics(t *testing.T) {
	binary := bench.Judgments{"a": 1, "c": 1}
	graded := bench.Judgments{"a": 3, "b": 1, "c": 2}
	tests := []struct {
		name   string
		ranked []string
		judged bench.Judgments
		k      int
		ndcg   float64
		mrr    float64
		recall float64
	}{
		{"perfect binary", []string{"a", "c", "b"}, binary, 10, 1, 1, 1},
		// DCG = 1/log2(3); ideal = 1 + 1/log2(3).
		{"relevant at ranks 2 and 3", []string{"x", "a", "c"}, binary, 10, (1/math.Log2(3) + 1/math.Log2(4)) / (1 + 1/math.Log2(3)), 0.5, 1},
		{"cut at k", []string{"x", "a", "c"}, binary, 2, (1 / math.Log2(3)) / (1 + 1/math.Log2(3)), 0.5, 0.5},
		{"nothing relevant found", []string{"x", "y"}, binary, 10, 0, 0, 0},
		{"no judgments", []string{"a"}, bench.Judgments{}, 10, 0, 0, 0},
		// Graded: gains 7, 1, 3; ideal order a, c, b.
		{"graded in ideal order", []string{"a", "c", "b"}, graded, 10, 1, 1, 1},
		{"graded reversed", []string{"b", "c", "a"}, graded, 10, (1 + 3/math.Log2(3) + 7/math.Log2(4)) / (7 + 3/math.Log2(3) + 1/math.Log2(4)), 1, 1},
		{"zero grade is not relevant", []string{"z", "a"}, bench.Judgments{"z": 0, "a": 1}, 10, 1 / math.Log2(3), 0.5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(metric string, got, want float64) {
				if math.Abs(got-want) > 1e-12 {
					t.Errorf("%s = %v, want %v", metric, got, want)
				}
			}
			check("nDCG", bench.NDCG(tt.ranked, tt.judged, tt.k), tt.ndcg)
			check("MRR", bench.MRR(tt.ranked, tt.judged, tt.k), tt.mrr)
			check("Recall", bench.Recall(tt.ranked, tt.judged, tt.k), tt.recall)
		})
	}
}
