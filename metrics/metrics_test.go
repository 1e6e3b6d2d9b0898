package metrics_test

import (
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/metrics"
)

// TestObservePack checks what one pack adds to each series, from the
// numbers the pack itself reports.
func TestObservePack(t *testing.T) {
	m := metrics.New(metrics.WithOPACache(func() (uint64, uint64) { return 7, 3 }),
		metrics.WithPacksInFlight(func() int { return 4 }),
		metrics.WithItemCache(func() metrics.ItemCache {
			return metrics.ItemCache{Hits: 11, Misses: 5, Items: 9, Bytes: 4096, Selective: true}
		}))
	p := &h4r.Pack{
		Status:  h4r.StatusDegraded,
		Sources: map[string]h4r.SourceStats{"fulltext": {Candidates: 40, Ms: 12}, "graph": {Candidates: 5, Ms: 3}},
		Explainability: h4r.Explainability{
			Timings:     h4r.Timings{RetrievalMs: 20, SlicingMs: 5, SummarizationMs: 1},
			Affordances: []h4r.Affordance{{Type: "suggest_fix"}, {Type: "rerun_tests"}, {Type: "suggest_fix"}},
			Slicing: h4r.SlicingStats{
				BudgetUsed:  h4r.BudgetUsage{Bytes: 500, EstimatedTokens: 100, Items: 5},
				BudgetLimit: h4r.BudgetUsage{Bytes: 1000, EstimatedTokens: 0, Items: 10},
			},
		},
	}
	m.ObservePack(p)
	m.ObservePack(p)
	m.Rejected(h4r.EUNAUTH)
	sum := func(name string, labels ...string) float64 { v, _ := gather(t, m, name, labels...); return v }
	count := func(name string) float64 { _, n := gather(t, m, name); return float64(n) }
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"fulltext candidates", sum("h4r_candidates_total", "source", "fulltext"), 80},
		{"graph candidates", sum("h4r_candidates_total", "source", "graph"), 10},
		{"opa cache hits", sum("scs_opa_cache_hits_total"), 7},
		{"opa cache misses", sum("scs_opa_cache_misses_total"), 3},
		{"packs in flight, read from the engine", sum("h4r_packs_in_flight"), 4},
		{"item cache hits", sum("h4r_item_cache_hits_total"), 11},
		{"item cache misses", sum("h4r_item_cache_misses_total"), 5},
		{"item cache items", sum("h4r_item_cache_items"), 9},
		{"item cache bytes", sum("h4r_item_cache_bytes"), 4096},
		{"item cache selective", sum("h4r_item_cache_selective"), 1},
		{"retrieval observations", sum("h4r_retrieval_duration_seconds"), 2},
		{"generator observations", sum("h4r_generator_duration_seconds", "source", "graph"), 2},
		{"budget kinds observed (tokens has no limit)", count("scs_budget_utilization_ratio"), 2},
		{"suggest_fix affordances", sum("context_pack_affordances_generated_total", "type", "suggest_fix"), 4},
		{"affordance types", count("context_pack_affordances_generated_total"), 2},
		{"degraded packs", sum("context_packs_total", "status", "degraded"), 2},
		{"rejected unauthenticated", sum("h4r_requests_rejected_total", "reason", "unauthenticated"), 1},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestItemCacheSeriesWithoutACache checks that the item cache's series
// are registered at 0 before a store is wired, so dashboards and alerts
// can be written first.
func TestItemCacheSeriesWithoutACache(t *testing.T) {
	m := metrics.New()
	for _, name := range []string{"h4r_item_cache_hits_total", "h4r_item_cache_misses_total",
		"h4r_item_cache_items", "h4r_item_cache_bytes", "h4r_item_cache_selective"} {
		v, n := gather(t, m, name)
		if n != 1 || v != 0 {
			t.Errorf("%s: %d series summing to %v, want one at 0", name, n, v)
		}
	}
}

// TestRegistriesAreSeparate checks that two servers' metrics do not share
// counters (no global registry).
func TestRegistriesAreSeparate(t *testing.T) {
	a, b := metrics.New(), metrics.New()
	a.Rejected(h4r.EINVALID)
	if got, _ := gather(t, b, "h4r_requests_rejected_total"); got != 0 {
		t.Errorf("the second registry counted %v rejections", got)
	}
}
