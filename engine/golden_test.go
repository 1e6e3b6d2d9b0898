package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/internal/golden"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// labelledQuery is one entry of demo/testdata/queries.json.
type labelledQuery struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Relevant []string `json:"relevant"`
}

// rankingFloor is the least mean nDCG@10 the golden may record on the demo
// queries. -update refuses to write a file under it, so that a ranking
// collapse cannot be blessed by a blind rewrite; raise it when ranking
// improves. (0.754 with the shipped weights when it was set at 0.70; 0.843
// with query analysis and the first tuned weights, relevance-only
// 0.909; 0.910 with the weights tuned on the synthetic set whose confusers
// match only a little better.)
const rankingFloor = 0.90

// TestRankingGolden runs the labelled demo queries through the whole engine
// and writes nDCG@10, MRR@10 and Recall@10 of the ranking (before policy and
// budgets, which are not ranking) to testdata/ranking.golden, so that any
// change to ranking shows up in review as a change of these numbers.
// Rewrite with: go test ./engine -run TestRankingGolden -update
func TestRankingGolden(t *testing.T) {
	report, mean := rankDemoQueries(t, nil)
	if mean < rankingFloor {
		t.Fatalf("mean nDCG@10 %.3f is under the floor %.3f: the ranking collapsed (the golden was not rewritten)\n%s", mean, rankingFloor, report)
	}
	golden.Text(t, filepath.Join("testdata", "ranking.golden"), report, *update)
}

// TestRankingFloorCatchesACollapse: weights that ignore relevance rank the
// demo queries far under the floor, so the floor can fail.
func TestRankingFloorCatchesACollapse(t *testing.T) {
	_, mean := rankDemoQueries(t, map[string]float64{"relevance": 0, "sensitivity": 1})
	if mean >= rankingFloor {
		t.Errorf("a ranking by sensitivity alone scores %.3f, not under the floor %.3f: the floor catches nothing", mean, rankingFloor)
	}
}

// TestDefaultsDoNotLoseToRelevanceOnly: on the demo's labelled queries,
// where metadata varies as in real memory, the shipped weights rank at
// least as well as full-text relevance alone (they lost 0.844 to 0.909
// before the synthetic set's confusers were made realistic).
func TestDefaultsDoNotLoseToRelevanceOnly(t *testing.T) {
	_, defaults := rankDemoQueries(t, nil)
	_, relevance := rankDemoQueries(t, map[string]float64{"relevance": 1, "recency": 0, "frequency": 0, "importance": 0,
		"causality": 0, "novelty": 0, "trust": 0, "sensitivity": 0})
	t.Logf("mean nDCG@10: shipped defaults %.3f, relevance-only %.3f", defaults, relevance)
	if defaults < relevance {
		t.Errorf("shipped defaults %.3f < relevance-only %.3f mean nDCG@10 on the demo queries", defaults, relevance)
	}
}

// rankDemoQueries ranks the labelled demo queries (with weights overriding
// the defaults, when given) and returns the golden report and the mean
// nDCG@10.
func rankDemoQueries(t *testing.T, weights map[string]float64) ([]byte, float64) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "demo", "testdata", "queries.json"))
	if err != nil {
		t.Fatal(err)
	}
	var queries []labelledQuery
	if err := json.Unmarshal(raw, &queries); err != nil {
		t.Fatalf("parsing queries.json: %v", err)
	}
	a := openDemo(t)
	// The store records deliveries asynchronously; without an access
	// recorder the frequency signal stays the same across queries.
	e := newEngine(t, a, patient, nil)
	admin := h4r.Specialist{Type: "specialist", ID: "golden", SecurityLevel: h4r.Restricted, AuthorizedGroups: []string{"qa", "security"}}

	var out bytes.Buffer
	fmt.Fprintln(&out, "# Ranking quality on the demo corpus (demo/testdata/queries.json), default weights,")
	fmt.Fprintln(&out, "# clock 2026-11-21T12:00Z. Rewrite: go test ./engine -run TestRankingGolden -update")
	fmt.Fprintf(&out, "%-36s %8s %8s %8s\n", "query", "nDCG@10", "MRR@10", "R@10")
	var sumNDCG, sumMRR, sumRecall float64
	for _, q := range queries {
		req := h4r.ContextRequest{Query: h4r.Query{Text: q.Text}, Weights: weights, Explain: h4r.ExplainAll}
		plan, err := req.Plan("")
		if err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
		plan.Audit = true // the ranking of every candidate, those policy denied included
		p, err := e.Run(context.Background(), admin, plan)
		if err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
		ranked := make([]string, len(p.Explainability.Items))
		for _, it := range p.Explainability.Items {
			ranked[it.Rank-1] = it.ID
		}
		judged := bench.Judgments{}
		for _, id := range q.Relevant {
			judged[id] = 1
		}
		ndcg, mrr, recall := bench.NDCG(ranked, judged, 10), bench.MRR(ranked, judged, 10), bench.Recall(ranked, judged, 10)
		sumNDCG, sumMRR, sumRecall = sumNDCG+ndcg, sumMRR+mrr, sumRecall+recall
		fmt.Fprintf(&out, "%-36s %8.3f %8.3f %8.3f\n", q.ID, ndcg, mrr, recall)
	}
	n := float64(len(queries))
	fmt.Fprintf(&out, "%-36s %8.3f %8.3f %8.3f\n", "mean", sumNDCG/n, sumMRR/n, sumRecall/n)
	return out.Bytes(), sumNDCG / n
}
